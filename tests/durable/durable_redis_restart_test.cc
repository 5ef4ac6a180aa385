// tests/durable/durable_redis_restart_test.cc
// -----------------------------------------------------------------------------
// Redis killed (SIGKILL) and restarted in the middle of a run, with
// appendonly yes and appendfsync always: every timer whose Schedule()
// returned OK is still delivered, the process reconnects by itself, and
// what was acknowledged before the crash stays acknowledged.

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

TEST(DurableRedisRestartTest, ACrashOfRedisMidRunLosesNoTimer) {
  auto redis = RedisServer::Start().value();
  DurableTimerOptions o = TestOptions(*redis);
  o.lease = absl::Seconds(1);
  o.redis_timeout = absl::Milliseconds(500);
  auto timers = DurableTimer::Connect(o).value();
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    absl::SleepFor(absl::Milliseconds(2));
                    return absl::OkStatus();
                  })
                  .ok());
  const int n = 200;
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < n; ++i) {
    entries.push_back({"r" + std::to_string(i),
                       absl::Now() + absl::Milliseconds(10 * i), ""});
  }
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() >= 20; }));
  ASSERT_TRUE(redis->Kill().ok());

  // While it is down: Unavailable, promptly, and nothing is lost.
  const absl::Status down = timers->ScheduleAfter("during", absl::Seconds(1));
  EXPECT_TRUE(absl::IsUnavailable(down)) << down;
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_TRUE(redis->Restart().ok());

  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == n; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  const DurableMetrics m = timers->metrics();
  EXPECT_GE(m.reconnects, 1);
  EXPECT_GE(m.redis_errors, 1);
  // A delivery whose acknowledgement the crash swallowed comes again.
  EXPECT_GE(m.delivered, n);
}

TEST(DurableRedisRestartTest, AcknowledgedTimersStayAcknowledged) {
  auto redis = RedisServer::Start().value();
  auto timers = DurableTimer::Connect(TestOptions(*redis)).value();
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(
        timers->ScheduleAfter("a" + std::to_string(i), absl::ZeroDuration())
            .ok());
  }
  ASSERT_TRUE(timers->ScheduleAfter("later", absl::Seconds(1)).ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 1; }));
  ASSERT_TRUE(redis->Kill().ok());
  ASSERT_TRUE(redis->Restart().ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("later") == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.Total(), 31u);  // none of the 30 came back
}

}  // namespace
}  // namespace tickwheel::durable
