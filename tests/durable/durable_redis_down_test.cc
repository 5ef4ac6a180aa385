// tests/durable/durable_redis_down_test.cc
// -----------------------------------------------------------------------------
// Redis down or unreachable: every call returns Unavailable within about
// redis_timeout -- whether nothing listens, Redis hangs (SIGSTOP), or it
// died under a running DurableTimer -- and never hangs or crashes; delivery
// resumes by itself when Redis is back; Stop() returns promptly with Redis
// down, and what it could not hand back is delivered again after the lease.
// Durations are checked against bounds far above redis_timeout (shared
// machines, sanitizers), never against the timeout itself.

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

constexpr absl::Duration kTimeout = absl::Milliseconds(300);
constexpr absl::Duration kBound = absl::Seconds(5);  // "about the timeout"

template <typename F>
absl::Duration Timed(F&& f) {
  const absl::Time start = absl::Now();
  f();
  return absl::Now() - start;
}

TEST(DurableRedisDownTest, ConnectingToNothingIsUnavailable) {
  DurableTimerOptions o;
  o.redis = "tcp://127.0.0.1:" + std::to_string(testing::FreePort().value());
  o.redis_timeout = kTimeout;
  absl::Status s;
  const absl::Duration took =
      Timed([&] { s = DurableTimer::Connect(o).status(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(std::string(s.message()).find(o.redis.substr(6)), std::string::npos)
      << s;
  EXPECT_LT(took, kBound);
}

TEST(DurableRedisDownTest, AHungRedisMakesEveryCallUnavailableInTime) {
  auto redis = RedisServer::Start().value();
  DurableTimerOptions o = TestOptions(*redis);
  o.redis_timeout = kTimeout;
  auto timers = DurableTimer::Connect(o).value();
  ASSERT_TRUE(redis->Pause().ok());
  absl::Status s;
  EXPECT_LT(Timed([&] { s = timers->ScheduleAfter("x", absl::Seconds(1)); }),
            kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_LT(Timed([&] { s = timers->Cancel("x").status(); }), kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_LT(Timed([&] { s = timers->Pending().status(); }), kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  std::vector<ScheduleEntry> many = {{"y", absl::Now(), ""}};
  EXPECT_LT(Timed([&] { s = timers->ScheduleMany(many); }), kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_LT(Timed([&] { s = DurableTimer::Connect(o).status(); }), kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  ASSERT_TRUE(redis->Resume().ok());
  // Back: the same object works again, without being told.
  ASSERT_TRUE(WaitUntil(
      [&] { return timers->ScheduleAfter("x", absl::Seconds(1)).ok(); }));
  EXPECT_GE(timers->metrics().redis_errors, 4);
  EXPECT_GE(timers->metrics().reconnects, 1);
}

TEST(DurableRedisDownTest, DeliveryResumesByItselfWhenRedisIsBack) {
  auto redis = RedisServer::Start().value();
  DurableTimerOptions o = TestOptions(*redis);
  o.redis_timeout = kTimeout;
  auto timers = DurableTimer::Connect(o).value();
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(timers
                    ->ScheduleAfter("d" + std::to_string(i),
                                    absl::Milliseconds(700 + 10 * i))
                    .ok());
  }
  ASSERT_TRUE(redis->Kill().ok());
  absl::Status s;
  EXPECT_LT(Timed([&] { s = timers->ScheduleAfter("x", absl::Seconds(1)); }),
            kBound);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  absl::SleepFor(absl::Milliseconds(1200));  // past the deadlines
  EXPECT_EQ(seen.Total(), 0u);
  ASSERT_TRUE(redis->Restart().ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 10; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_GE(timers->metrics().reconnects, 1);
}

TEST(DurableRedisDownTest, StopReturnsPromptlyAndLeasesBringTheTimersBack) {
  auto redis = RedisServer::Start().value();
  DurableTimerOptions o = TestOptions(*redis);
  o.redis_timeout = kTimeout;
  o.poll_interval = absl::Seconds(1);  // claims 1 s ahead, holds locally
  o.lease = absl::Seconds(2);
  o.handler_threads = 8;  // may hold 2 x 8 ahead
  auto first = DurableTimer::Connect(o).value();
  ASSERT_TRUE(
      first->Start([](const FiredTimer&) { return absl::OkStatus(); }).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        first->ScheduleAfter("h" + std::to_string(i), absl::Milliseconds(1500))
            .ok());
  }
  ASSERT_TRUE(WaitUntil([&] {
    int held = 0;
    for (int s = 0; s < 4; ++s) {
      held +=
          redis
              ->Command({"ZCARD", "{tw-test:" + std::to_string(s) + "}:leases"})
              ->AsInt();
    }
    return held == 5;
  }));
  ASSERT_TRUE(redis->Pause().ok());  // hangs: the worst case for Stop()
  EXPECT_LT(Timed([&] { EXPECT_TRUE(first->Stop().ok()); }), kBound);
  ASSERT_TRUE(redis->Resume().ok());

  auto second = DurableTimer::Connect(o).value();
  Deliveries seen;
  ASSERT_TRUE(second->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 5; }));
  ASSERT_TRUE(second->Stop().ok());
  EXPECT_EQ(first->metrics().delivered, 0);
}

}  // namespace
}  // namespace tickwheel::durable
