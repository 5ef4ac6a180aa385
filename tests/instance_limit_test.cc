// The process-wide instance count: a one-time warning past the limit, or
// ResourceExhausted when the user asks for it. Its own binary, since the count
// and the warning are process-wide.

#include "tickwheel/timer/instance_limit.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;

class InstanceLimitTest : public ::testing::Test {
 protected:
  void SetUp() override { internal::ResetInstanceWarningForTesting(); }
  void TearDown() override { SetInstanceLimit(InstanceLimit{}); }
};

TEST_F(InstanceLimitTest, WarnsOnceWhenTheLimitIsPassed) {
  CapturedLog log;
  SetInstanceLimit({.max_instances = 2, .fail_create = false});
  std::vector<std::unique_ptr<Timer>> timers;
  for (int i = 0; i < 2; ++i) timers.push_back(Timer::Create().value());
  EXPECT_TRUE(log.messages().empty());
  EXPECT_EQ(LiveTimerCount(), 2);
  timers.push_back(Timer::Create().value());
  timers.push_back(Timer::Create().value());
  ASSERT_EQ(log.messages().size(), 1u);
  EXPECT_NE(log.messages()[0].find(
                "You are creating too many tickwheel Timer instances"),
            std::string::npos)
      << log.messages()[0];
  EXPECT_NE(log.messages()[0].find("3 live, limit 2"), std::string::npos);
  timers.clear();
  EXPECT_EQ(LiveTimerCount(), 0);
}

TEST_F(InstanceLimitTest, FailCreateReturnsResourceExhausted) {
  SetInstanceLimit({.max_instances = 1, .fail_create = true});
  auto first = Timer::Create().value();
  absl::StatusOr<std::unique_ptr<Timer>> second = Timer::Create();
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("limit 1"), std::string::npos)
      << second.status();
  EXPECT_EQ(LiveTimerCount(), 1);
  // A stopped timer no longer counts.
  ASSERT_TRUE(first->stop().ok());
  EXPECT_EQ(LiveTimerCount(), 0);
  EXPECT_TRUE(Timer::Create().ok());
}

TEST_F(InstanceLimitTest, ZeroDisablesTheCheck) {
  CapturedLog log;
  SetInstanceLimit({.max_instances = 0, .fail_create = true});
  std::vector<std::unique_ptr<Timer>> timers;
  for (int i = 0; i < 100; ++i) timers.push_back(Timer::Create().value());
  EXPECT_TRUE(log.messages().empty());
}

TEST_F(InstanceLimitTest, DefaultLimitIs64) {
  EXPECT_EQ(SetInstanceLimit(InstanceLimit{}).max_instances, 64);
  CapturedLog log;
  std::vector<std::unique_ptr<Timer>> timers;
  for (int i = 0; i < 64; ++i) timers.push_back(Timer::Create().value());
  EXPECT_TRUE(log.messages().empty());
  timers.push_back(Timer::Create().value());
  EXPECT_EQ(log.messages().size(), 1u);
}

}  // namespace
}  // namespace tickwheel
