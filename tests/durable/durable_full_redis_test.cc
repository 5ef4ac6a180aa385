// tests/durable/durable_full_redis_test.cc
// -----------------------------------------------------------------------------
// A full Redis (maxmemory reached, maxmemory-policy noeviction, as
// docs/DURABLE.md requires) refuses what would grow it: a new schedule is
// ResourceExhausted and changes nothing. What frees memory or holds it
// steady goes on: timers already scheduled are claimed, delivered and
// acknowledged (an acknowledgement is what frees the memory), a cancel
// works, and Connect() to a keyspace that exists works. The metrics count
// the refusals and say whether Redis is full; once it has room again, they
// say so and schedules are accepted.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;

class DurableFullRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RedisServer::Options o;
    o.extra_args = {"--maxmemory-policy", "noeviction"};
    absl::StatusOr<std::unique_ptr<RedisServer>> r = RedisServer::Start(o);
    ASSERT_TRUE(r.ok()) << r.status();
    redis_ = *std::move(r);
  }

  // Makes Redis full: maxmemory below what it uses now.
  void Fill() {
    const std::string info = redis_->Command({"INFO", "memory"})->str;
    const size_t at = info.find("used_memory:");
    ASSERT_NE(at, std::string::npos);
    const int64_t used = std::stoll(info.substr(at + 12));
    ASSERT_TRUE(
        redis_
            ->Command({"CONFIG", "SET", "maxmemory", std::to_string(used / 2)})
            .ok());
    ASSERT_TRUE(redis_->Command({"SET", "probe", "x"})->IsErrorCode("OOM"));
  }

  std::unique_ptr<RedisServer> redis_;
};

TEST_F(DurableFullRedisTest, DeliveryAndAcknowledgementGoOnWhenRedisIsFull) {
  DurableTimerOptions o = TestOptions(*redis_);
  auto timers = DurableTimer::Connect(o).value();
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 200; ++i) {
    entries.push_back({"t" + std::to_string(i), absl::Now(), "payload"});
  }
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  ASSERT_TRUE(timers->ScheduleAfter("cancel-me", absl::Hours(1)).ok());
  Fill();

  // New schedules are refused, and say so.
  const absl::Status refused = timers->ScheduleAfter("new", absl::Hours(1));
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_TRUE(absl::IsResourceExhausted(timers->ScheduleMany(
      std::vector<ScheduleEntry>{{"new2", absl::Now(), ""}})))
      << "ScheduleMany";
  EXPECT_GE(timers->metrics().redis_oom, 2);
  EXPECT_TRUE(timers->metrics().redis_full);
  // A process that joins the keyspace connects; a new keyspace is refused.
  absl::StatusOr<std::unique_ptr<DurableTimer>> joined =
      DurableTimer::Connect(o);
  ASSERT_TRUE(joined.ok()) << joined.status();
  absl::StatusOr<std::unique_ptr<DurableTimer>> fresh =
      DurableTimer::Connect(TestOptions(*redis_, "another"));
  EXPECT_TRUE(absl::IsResourceExhausted(fresh.status())) << fresh.status();
  // Cancel frees.
  EXPECT_TRUE(timers->Cancel("cancel-me").value());

  // Delivery and acknowledgement go on, in the process that joined.
  Deliveries seen;
  ASSERT_TRUE((*joined)->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }))
      << seen.Total() << " delivered, " << timers->Pending().value()
      << " pending";
  EXPECT_EQ(seen.Distinct(), 200u);
  EXPECT_FALSE(absl::IsResourceExhausted(timers->Pending().status()));
  ASSERT_TRUE((*joined)->Stop().ok());  // its last replies are applied
  EXPECT_EQ((*joined)->metrics().acknowledged, 200);
  ASSERT_TRUE(timers->Stop().ok());
}

// The delivering process notices by itself that Redis has room again: it
// probes once per poll interval while it believes Redis full.
TEST_F(DurableFullRedisTest, TheMetricsSayWhenRedisHasRoomAgain) {
  DurableTimerOptions o = TestOptions(*redis_);
  auto timers = DurableTimer::Connect(o).value();
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::Hours(1)).ok());
  ASSERT_TRUE(
      timers->Start([](const FiredTimer&) { return absl::OkStatus(); }).ok());
  Fill();
  EXPECT_TRUE(
      absl::IsResourceExhausted(timers->ScheduleAfter("y", absl::Hours(1))));
  EXPECT_TRUE(timers->metrics().redis_full);
  ASSERT_TRUE(redis_->Command({"CONFIG", "SET", "maxmemory", "0"}).ok());
  EXPECT_TRUE(WaitUntil([&] { return !timers->metrics().redis_full; }));
  EXPECT_TRUE(timers->ScheduleAfter("y", absl::Hours(1)).ok());
  ASSERT_TRUE(timers->Stop().ok());
}

}  // namespace
}  // namespace tickwheel::durable
