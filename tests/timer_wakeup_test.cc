// tests/timer_wakeup_test.cc
// -----------------------------------------------------------------------------
// When the worker wakes, on a ManualClock: not every tick, only for due work,
// for an earlier newTimeout(), for housekeeping while traffic flows, and when
// a backlog reaches its bound (a producer's lane overflows, or thousands of
// cancelled timeouts wait on one shard); never for an ordinary cancel().
// (What a worker that wakes late does with an overdue backlog is in
// catch_up_test.)

#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/shared_state.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::SettlePastHousekeeping;
using ::tickwheel::testing::Tick;

TEST(TimerWakeupTest, OneFarTimeoutCostsNoWakeUps) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  t.timer->newTimeout([](const Timeout&) {}, absl::Hours(1)).value();
  // The first ticks drain the pending queue (housekeeping); after that the
  // worker sleeps until the timeout is due, whatever the clock does.
  SettlePastHousekeeping(t);
  const int64_t after_start = t.timer->metrics().wakeups;
  t.clock->AdvanceInSteps(absl::Seconds(5), absl::Milliseconds(1));
  EXPECT_EQ(t.timer->metrics().wakeups, after_start);
  EXPECT_LE(after_start, 3);
}

TEST(TimerWakeupTest, LaterNewTimeoutDoesNotWakeEarlierDoes) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 64));
  t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(10)).value();
  SettlePastHousekeeping(t);
  const int64_t base = t.timer->metrics().wakeups;

  t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(20)).value();
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base);  // due later: no wake-up

  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Seconds(1)).value();
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base + 1);  // due earlier: re-plans
  t.clock->AdvanceInSteps(absl::Seconds(1), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(probe->ran_at_nanos.load(), 1002 * kMs);  // scheduled at 2 ms
}

TEST(TimerWakeupTest, CancelNeverWakesTheWorker) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 64));
  std::vector<Timeout> timeouts;
  for (int i = 1; i <= 10; ++i) {
    timeouts.push_back(
        t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(i)).value());
  }
  SettlePastHousekeeping(t);
  const int64_t base = t.timer->metrics().wakeups;
  for (Timeout& timeout : timeouts) ASSERT_TRUE(timeout.cancel());
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(TimerWakeupTest, CancelledNodesAreUnlinkedWhileTrafficFlows) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 64));
  std::vector<std::shared_ptr<Probe>> probes;
  // The request-timeout pattern: schedule, cancel right after, repeatedly.
  for (int i = 0; i < 5; ++i) {
    probes.push_back(std::make_shared<Probe>());
    Timeout timeout =
        t.timer->newTimeout(ProbeTask(probes.back()), absl::Seconds(30))
            .value();
    ASSERT_TRUE(timeout.cancel());
    t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  for (const auto& probe : probes) {
    EXPECT_TRUE(probe->captures_destroyed.load());
    EXPECT_EQ(probe->runs.load(), 0);
  }
  // The housekeeping ticks have unlinked every cancelled node.
  EXPECT_EQ(t.timer->metrics().cancelled, 5);
}

// A producer's lane holds kLaneCapacity timeouts for a sleeping worker; the
// first one past it goes to the overflow queue and wakes the worker, however
// late it is due, so that queued (and cancelled) nodes wait for a bounded
// count rather than for the next deadline.
TEST(TimerWakeupTest, OverflowingTheLaneWakesTheWorker) {
  constexpr int kLane = internal::SharedTimerState::kLaneCapacity;
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(10)).value();
  SettlePastHousekeeping(t);  // the worker sleeps until 10 s
  const int64_t base = t.timer->metrics().wakeups;
  for (int i = 0; i < kLane; ++i) {
    t.timer->newTimeout([](const Timeout&) {}, absl::Hours(1)).value();
  }
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base);  // a full lane, still asleep
  t.timer->newTimeout([](const Timeout&) {}, absl::Hours(1)).value();
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base + 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), kLane + 2);
}

// Cancelling armed timeouts does not wake the worker, until
// kNoticeBacklogWake of them wait on one shard's notice queue: then
// the cancel() that reaches the bound wakes it, to reclaim them.
TEST(TimerWakeupTest, CancelBacklogWakesTheWorkerAtItsBound) {
  constexpr int kBound = internal::SharedTimerState::kNoticeBacklogWake;
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(10)).value();
  std::vector<Timeout> timeouts;
  for (int i = 0; i < kBound + 10; ++i) {
    timeouts.push_back(
        t.timer->newTimeout([](const Timeout&) {}, absl::Hours(1)).value());
  }
  SettlePastHousekeeping(t);  // all armed; the worker sleeps until 10 s
  const int64_t base = t.timer->metrics().wakeups;
  const int64_t cancelled = t.timer->metrics().cancelled;
  for (int i = 0; i < kBound - 1; ++i) ASSERT_TRUE(timeouts[i].cancel());
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base);
  ASSERT_TRUE(timeouts[kBound - 1].cancel());
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, base + 1);
  // Counted when each cancel() returned, reclaimed or not.
  EXPECT_EQ(t.timer->metrics().cancelled, cancelled + kBound);
  EXPECT_EQ(t.timer->pendingTimeouts(), 11);
}

TEST(TimerWakeupTest, FarTimeoutsAreNotWalkedUntilDue) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 64));
  for (int i = 0; i < 1000; ++i) {
    t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(10 + i % 50))
        .value();
  }
  SettlePastHousekeeping(t);
  const int64_t base = t.timer->metrics().wakeups;
  // 9 s of a 1 ms tick: Netty's wheel would wake 9000 times; this one wakes
  // only to move the far buckets down a level as their time comes.
  t.clock->AdvanceInSteps(absl::Seconds(9), absl::Milliseconds(1));
  EXPECT_LT(t.timer->metrics().wakeups - base, 20);
  EXPECT_EQ(t.timer->metrics().expired, 0);
}

}  // namespace
}  // namespace tickwheel
