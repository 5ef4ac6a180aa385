// tests/durable/durable_never_early_test.cc
// -----------------------------------------------------------------------------
// Never early, on Redis's clock: a handler starts only once Redis's TIME has
// reached the timer's deadline -- also for timers a process claimed ahead
// of their deadline and held in its local Timer, and for ScheduleAfter(),
// whose deadline is Redis's now plus the delay. Deadlines here are read off
// Redis's clock, not this process's, as another machine's would be.
// And prompt: with the process idle, a timer starts within the poll
// interval plus a margin this test keeps generous.

#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;

struct Start {
  std::string id;
  absl::Time deadline;
  int64_t redis_now_us;  // Redis's TIME read inside the handler
};

// Schedules `n` timers 0-1.5 s ahead on Redis's clock, half with
// Schedule(absolute), half with ScheduleAfter(); checks inside the handler
// that Redis's clock has reached each deadline.
void CheckNeverEarly(RedisServer& redis, DurableTimerOptions options, int n) {
  auto timers = DurableTimer::Connect(options).value();
  std::mutex mu;
  std::vector<Start> starts;
  ASSERT_TRUE(
      timers
          ->Start([&](const FiredTimer& t) {
            std::lock_guard<std::mutex> lock(mu);
            // A TIME read after the start: if the start had been
            // early by more than this round trip, it shows.
            starts.push_back({t.id, t.deadline, redis.TimeMicros().value()});
            return absl::OkStatus();
          })
          .ok());
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> offset_ms(0, 1500);
  for (int i = 0; i < n; ++i) {
    const int ms = offset_ms(rng);
    const std::string id = "t" + std::to_string(i);
    if (i % 2 == 0) {
      int64_t now_us;
      {
        std::lock_guard<std::mutex> lock(mu);  // the fixture's connection
        now_us = redis.TimeMicros().value();
      }
      ASSERT_TRUE(timers
                      ->Schedule(id, absl::FromUnixMicros(now_us) +
                                         absl::Milliseconds(ms))
                      .ok());
    } else {
      ASSERT_TRUE(timers->ScheduleAfter(id, absl::Milliseconds(ms)).ok());
    }
  }
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return starts.size() == static_cast<size_t>(n);
  }));
  ASSERT_TRUE(timers->Stop().ok());
  for (const Start& s : starts) {
    EXPECT_GE(absl::FromUnixMicros(s.redis_now_us), s.deadline)
        << s.id << " started before its deadline on Redis's clock";
  }
  const DurableMetrics m = timers->metrics();
  EXPECT_EQ(m.delivered, n);
  EXPECT_EQ(m.lateness.count(), n);
}

using DurableNeverEarlyTest = testing::RedisTest;

// A 50 ms poll interval: most timers are claimed when due.
TEST_F(DurableNeverEarlyTest, ClaimedWhenDue) {
  CheckNeverEarly(*redis_, TestOptions(*redis_), 120);
}

// A 1 s poll interval: timers are claimed up to a second ahead and held in
// the local Timer until Redis's clock says they are due.
TEST_F(DurableNeverEarlyTest, ClaimedAheadAndHeldLocally) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.poll_interval = absl::Seconds(1);
  o.lease = absl::Seconds(5);
  CheckNeverEarly(*redis_, o, 120);
}

TEST_F(DurableNeverEarlyTest, PromptWhenIdle) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.poll_interval = absl::Milliseconds(200);
  // The poll alone: schedule hints (durable_schedule_hints_test) would
  // make these prompter, and a hint may always be lost.
  o.schedule_hints = false;
  auto scheduler = DurableTimer::Connect(o).value();  // another "process"
  auto timers = DurableTimer::Connect(o).value();
  std::mutex mu;
  std::vector<absl::Duration> lateness;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    std::lock_guard<std::mutex> lock(mu);  // one connection
                    const absl::Time now =
                        absl::FromUnixMicros(redis_->TimeMicros().value());
                    lateness.push_back(now - t.deadline);
                    return absl::OkStatus();
                  })
                  .ok());
  // Scheduled by a process that is not the deliverer, so the deliverer only
  // learns of them by polling.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(scheduler
                    ->ScheduleAfter("p" + std::to_string(i),
                                    absl::Milliseconds(100 + 37 * i))
                    .ok());
  }
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return lateness.size() == 20;
  }));
  ASSERT_TRUE(timers->Stop().ok());
  for (const absl::Duration d : lateness) {
    EXPECT_GE(d, absl::ZeroDuration());
    // The bound is poll_interval plus a few ms on an idle machine; a shared
    // machine under a sanitizer gets a generous margin.
    EXPECT_LT(d, o.poll_interval + absl::Seconds(2));
  }
  const LatenessHistogram h = timers->metrics().lateness;
  EXPECT_EQ(h.count(), 20);
  EXPECT_LT(h.max(), o.poll_interval + absl::Seconds(2));
}

}  // namespace
}  // namespace tickwheel::durable
