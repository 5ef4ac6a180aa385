// tests/local_timer_periodic_test.cc
// -----------------------------------------------------------------------------
// LocalTimer's periodic timeouts and reset(): periodic runs on the grid
// start + initial_delay + k * period, never early, once per advance(), the
// missed runs of a late loop following the policy (skipped by default); a
// task may cancel its own periodic timeout. reset() and resetAt() on the
// owner thread move a deadline either way, and nextWakeup() follows. On a
// ManualClock.

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::kUs;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::LogTask;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::RunLog;

TimePoint At(int64_t nanos) {
  return TimePoint(std::chrono::nanoseconds(nanos));
}

std::vector<int64_t> Times(const RunLog& log) {
  std::vector<int64_t> at;
  for (const RunLog::Run& r : log.runs) at.push_back(r.at);
  return at;
}

// A loop that follows pollTimeoutMs() exactly sees every run on the grid.
TEST(LocalTimerPeriodicTest, RunsOnTheGridWhenTheLoopFollowsThePlan) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock), absl::Microseconds(2500),
                        absl::Microseconds(3200))
          .value();
  EXPECT_TRUE(periodic.isPeriodic());
  for (int i = 0; i < 5; ++i) {
    const std::optional<TimePoint> wake = t.timer->nextWakeup();
    ASSERT_TRUE(wake.has_value());
    t.AdvanceTo(std::chrono::nanoseconds(wake->time_since_epoch()).count());
  }
  EXPECT_EQ(Times(log),
            (std::vector<int64_t>{2500 * kUs, 5700 * kUs, 8900 * kUs,
                                  12100 * kUs, 15300 * kUs}));
  EXPECT_EQ(DeadlineNanos(periodic), 18500 * kUs);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_EQ(t.timer->metrics().expired, 5);
  EXPECT_FALSE(periodic.isExpired());
}

// A loop that comes back late by several periods runs the task once, then
// resumes on the grid; one advance() never runs it twice.
TEST(LocalTimerPeriodicTest, ALateLoopRunsItOnceAndSkipsTheMissedRuns) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(10))
          .value();
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 1);
  EXPECT_EQ(t.AdvanceTo(55 * kMs), 1);  // 20..50 missed
  EXPECT_EQ(DeadlineNanos(periodic), 60 * kMs);
  EXPECT_EQ(t.timer->pollTimeoutMs(), 5);
  EXPECT_EQ(t.AdvanceTo(59 * kMs), 0);
  EXPECT_EQ(t.AdvanceTo(60 * kMs), 1);
  EXPECT_EQ(Times(log), (std::vector<int64_t>{10 * kMs, 55 * kMs, 60 * kMs}));
  // Lateness counts from the first run missed, at 20 ms.
  EXPECT_EQ(t.timer->metrics().lateness.max(), absl::Milliseconds(35));
}

// The task cancels itself: that run is its last, and the slot goes back.
TEST(LocalTimerPeriodicTest, ATaskThatCancelsItselfEndsItsRuns) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  int runs = 0;
  bool cancelled = false;
  Timeout periodic = t.timer
                         ->newPeriodic(
                             [&](const Timeout& self) {
                               if (++runs == 3) cancelled = self.cancel();
                             },
                             absl::Milliseconds(1), absl::Milliseconds(1))
                         .value();
  for (int64_t ms = 1; ms <= 10; ++ms) t.AdvanceTo(ms * kMs);
  EXPECT_EQ(runs, 3);
  EXPECT_TRUE(cancelled);
  EXPECT_TRUE(periodic.isCancelled());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
}

// reset() to an earlier deadline: nextWakeup() moves with it at once, and
// the task runs at the new deadline.
TEST(LocalTimerPeriodicTest, ResetEarlierMovesThePlanAndTheRun) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout timeout =
      t.timer->newTimeout(LogTask(&log, 0, t.clock), absl::Milliseconds(50))
          .value();
  t.AdvanceTo(10 * kMs);
  EXPECT_EQ(t.timer->nextWakeup(), At(50 * kMs));
  EXPECT_TRUE(timeout.reset(absl::Milliseconds(5)));
  EXPECT_EQ(t.timer->nextWakeup(), At(15 * kMs));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 5);
  EXPECT_EQ(t.AdvanceTo(15 * kMs - 1), 0);
  EXPECT_EQ(t.AdvanceTo(15 * kMs), 1);
  EXPECT_EQ(Times(log), (std::vector<int64_t>{15 * kMs}));
  EXPECT_FALSE(timeout.reset(absl::Milliseconds(1)));  // it ran
}

// reset() to a later deadline: the old deadline may still wake the loop
// (the wheel learns of the move when it gets there), but nothing runs
// then; the task runs at the new deadline. resetAt() likewise.
TEST(LocalTimerPeriodicTest, ResetLaterRunsAtTheNewDeadlineOnly) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout a =
      t.timer->newTimeout(LogTask(&log, 0, t.clock), absl::Milliseconds(5))
          .value();
  Timeout b =
      t.timer->newTimeout(LogTask(&log, 1, t.clock), absl::Milliseconds(6))
          .value();
  EXPECT_TRUE(a.reset(absl::Milliseconds(20)));
  EXPECT_TRUE(b.resetAt(At(30 * kMs)));
  EXPECT_EQ(DeadlineNanos(a), 20 * kMs);
  int64_t ran = 0;
  while (ran < 2) {
    const std::optional<TimePoint> wake = t.timer->nextWakeup();
    ASSERT_TRUE(wake.has_value());
    const int64_t at =
        std::chrono::nanoseconds(wake->time_since_epoch()).count();
    ASSERT_LE(at, 30 * kMs);
    ran += t.AdvanceTo(at);
  }
  EXPECT_EQ(log.Ids(), (std::vector<int>{0, 1}));
  EXPECT_EQ(Times(log), (std::vector<int64_t>{20 * kMs, 30 * kMs}));
}

// A periodic timeout's next run moved by reset(): the runs go on every
// period from the new deadline.
TEST(LocalTimerPeriodicTest, ResetMovesAPeriodicTimeoutsGrid) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(10))
          .value();
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 1);
  EXPECT_TRUE(periodic.reset(absl::Milliseconds(3)));
  for (int64_t ms = 11; ms <= 33; ++ms) t.AdvanceTo(ms * kMs);
  EXPECT_EQ(Times(log),
            (std::vector<int64_t>{10 * kMs, 13 * kMs, 23 * kMs, 33 * kMs}));
}

// The missed-run policies of base/missed_runs.h, as on a Timer: a loop that
// comes back 3.5 periods late.
TEST(LocalTimerPeriodicTest, BurstRunsEachMissedRunThenTheGrid) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(10), MissedRuns::kBurst)
          .value();
  // The runs due at 10, 20, 30 and 40 ms, back to back in one advance() at
  // 45 ms; then the grid.
  EXPECT_EQ(t.AdvanceTo(45 * kMs), 4);
  EXPECT_EQ(Times(log), (std::vector<int64_t>(4, 45 * kMs)));
  EXPECT_EQ(DeadlineNanos(periodic), 50 * kMs);
  EXPECT_EQ(t.AdvanceTo(50 * kMs), 1);
  EXPECT_EQ(t.timer->metrics().expired, 5);
}

TEST(LocalTimerPeriodicTest, DelayMovesTheGridToAPeriodAfterTheLateRun) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock),
                        std::chrono::milliseconds(10), absl::Milliseconds(10),
                        MissedRuns::kDelay)
          .value();
  EXPECT_EQ(t.AdvanceTo(45 * kMs), 1);
  EXPECT_EQ(DeadlineNanos(periodic), 55 * kMs);
  EXPECT_EQ(t.AdvanceTo(54 * kMs), 0);
  EXPECT_EQ(t.AdvanceTo(55 * kMs), 1);
  EXPECT_EQ(Times(log), (std::vector<int64_t>{45 * kMs, 55 * kMs}));
}

TEST(LocalTimerPeriodicTest, SkipIsTheDefault) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 0, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(10), MissedRuns::kSkip)
          .value();
  EXPECT_EQ(t.AdvanceTo(45 * kMs), 1);
  EXPECT_EQ(DeadlineNanos(periodic), 50 * kMs);
}

}  // namespace
}  // namespace tickwheel
