// tests/missed_runs_test.cc
// -----------------------------------------------------------------------------
// The missed-run policy of periodic timeouts (base/missed_runs.h): after a
// stall of the worker, kSkip skips the missed runs, kBurst runs them at once
// (at most kMaxBurstRuns of them) and kDelay moves the grid; a run less than
// a period late keeps the grid under all three; kSkip is the default. Each
// run counts and records its lateness from its own grid time. cancel() and
// reset() during a burst end it; with a task_executor, runs never overlap
// and a run that finds the previous one still on the executor waits under
// kBurst and kDelay. The next-run arithmetic holds at the ends of int64.
// On a ManualClock, so every run time is exact.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/task_runner.h"

namespace tickwheel {
namespace {

using ::tickwheel::internal::TaskRunner;
using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::QueueExecutor;
using ::tickwheel::testing::Tick;
using namespace std::chrono_literals;

std::vector<int64_t> Ms(std::initializer_list<int64_t> ms) {
  std::vector<int64_t> nanos;
  for (int64_t m : ms) nanos.push_back(m * kMs);
  return nanos;
}

// The clock reading and the deadline (Timeout::deadline(), the run's own
// while an inline run is in progress) of every run.
class Runs {
 public:
  void Add(int64_t clock, int64_t deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    clocks_.push_back(clock);
    deadlines_.push_back(deadline);
  }
  std::vector<int64_t> clocks() {
    std::lock_guard<std::mutex> lock(mu_);
    return clocks_;
  }
  std::vector<int64_t> deadlines() {
    std::lock_guard<std::mutex> lock(mu_);
    return deadlines_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> clocks_;
  std::vector<int64_t> deadlines_;
};

auto Recorder(std::shared_ptr<Runs> runs, std::shared_ptr<ManualClock> clock) {
  return [runs, clock](const Timeout& self) {
    runs->Add(clock->NowNanos(), DeadlineNanos(self));
  };
}

// A periodic timeout due at 10, 20, 30, ... ms on a 1 ms tick. The worker
// sees the clock at 10 ms, then not until `stall_to_ms` (a stall), then
// every millisecond up to `until_ms`.
struct Stalled {
  std::vector<int64_t> clocks;
  std::vector<int64_t> deadlines;
  TimerMetrics metrics;
};
Stalled RunThroughStall(MissedRuns policy, int64_t stall_to_ms,
                        int64_t until_ms) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  EXPECT_TRUE(t.timer
                  ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                                absl::Milliseconds(10), policy)
                  .ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(stall_to_ms - 10));
  t.clock->AdvanceInSteps(absl::Milliseconds(until_ms - stall_to_ms),
                          absl::Milliseconds(1));
  return {runs->clocks(), runs->deadlines(), t.timer->metrics()};
}

TEST(MissedRunsTest, SkipRunsOnceLateThenTheNextGridTime) {
  const Stalled s = RunThroughStall(MissedRuns::kSkip, 55, 75);
  EXPECT_EQ(s.clocks, Ms({10, 55, 60, 70}));
  EXPECT_EQ(s.deadlines, Ms({10, 20, 60, 70}));
  EXPECT_EQ(s.metrics.expired, 4);
}

TEST(MissedRunsTest, BurstRunsEachMissedRunAtOnceThenTheGrid) {
  const Stalled s = RunThroughStall(MissedRuns::kBurst, 55, 75);
  EXPECT_EQ(s.clocks, Ms({10, 55, 55, 55, 55, 60, 70}));
  EXPECT_EQ(s.deadlines, Ms({10, 20, 30, 40, 50, 60, 70}));
  // Every run counts, and its lateness is measured from its own grid time:
  // 35, 25, 15 and 5 ms for the late run and the burst.
  EXPECT_EQ(s.metrics.expired, 7);
  EXPECT_EQ(s.metrics.lateness.count(), 7);
  EXPECT_EQ(s.metrics.lateness.max(), absl::Milliseconds(35));
  EXPECT_EQ(s.metrics.worst_lateness, absl::Milliseconds(35));
}

TEST(MissedRunsTest, DelayMovesTheGridToAPeriodAfterTheLateRun) {
  const Stalled s = RunThroughStall(MissedRuns::kDelay, 55, 85);
  EXPECT_EQ(s.clocks, Ms({10, 55, 65, 75, 85}));
  EXPECT_EQ(s.deadlines, Ms({10, 20, 65, 75, 85}));
  EXPECT_EQ(s.metrics.expired, 5);
  EXPECT_EQ(s.metrics.lateness.max(), absl::Milliseconds(35));
}

TEST(MissedRunsTest, AStallOfWholePeriodsEndingOnTheGrid) {
  // The clock stops at 50 ms, itself a grid time: the runs at 30, 40 and 50
  // are missed (a grid time at the clock reading counts as come).
  const Stalled skip = RunThroughStall(MissedRuns::kSkip, 50, 60);
  EXPECT_EQ(skip.clocks, Ms({10, 50, 60}));
  EXPECT_EQ(skip.deadlines, Ms({10, 20, 60}));
  const Stalled burst = RunThroughStall(MissedRuns::kBurst, 50, 60);
  EXPECT_EQ(burst.clocks, Ms({10, 50, 50, 50, 50, 60}));
  EXPECT_EQ(burst.deadlines, Ms({10, 20, 30, 40, 50, 60}));
  const Stalled delay = RunThroughStall(MissedRuns::kDelay, 50, 60);
  EXPECT_EQ(delay.clocks, Ms({10, 50, 60}));
  EXPECT_EQ(delay.deadlines, Ms({10, 20, 60}));
}

TEST(MissedRunsTest, LessThanAPeriodLateKeepsTheGridUnderEveryPolicy) {
  for (MissedRuns policy :
       {MissedRuns::kSkip, MissedRuns::kBurst, MissedRuns::kDelay}) {
    const Stalled s = RunThroughStall(policy, 29, 40);
    EXPECT_EQ(s.clocks, Ms({10, 29, 30, 40})) << static_cast<int>(policy);
    EXPECT_EQ(s.deadlines, Ms({10, 20, 30, 40})) << static_cast<int>(policy);
  }
}

TEST(MissedRunsTest, SkipIsTheDefault) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  ASSERT_TRUE(t.timer
                  ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                                absl::Milliseconds(10))
                  .ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(45));
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  const Stalled skip = RunThroughStall(MissedRuns::kSkip, 55, 75);
  EXPECT_EQ(runs->clocks(), skip.clocks);
  EXPECT_EQ(runs->deadlines(), skip.deadlines);
}

TEST(MissedRunsTest, ChronoAndMixedDurationsTakeThePolicy) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto chrono = std::make_shared<Runs>();
  auto mixed = std::make_shared<Runs>();
  auto seconds = std::make_shared<Runs>();
  ASSERT_TRUE(t.timer
                  ->newPeriodic(Recorder(chrono, t.clock), 10ms,
                                std::chrono::milliseconds(10),
                                MissedRuns::kBurst)
                  .ok());
  ASSERT_TRUE(t.timer
                  ->newPeriodic(Recorder(mixed, t.clock),
                                absl::Milliseconds(10), 10ms,
                                MissedRuns::kDelay)
                  .ok());
  ASSERT_TRUE(t.timer
                  ->newPeriodic(Recorder(seconds, t.clock),
                                std::chrono::duration<double, std::milli>(10),
                                absl::Milliseconds(10), MissedRuns::kSkip)
                  .ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(35));  // 20, 30, 40 missed
  EXPECT_EQ(chrono->clocks(), Ms({10, 45, 45, 45}));
  EXPECT_EQ(chrono->deadlines(), Ms({10, 20, 30, 40}));
  t.clock->AdvanceInSteps(absl::Milliseconds(10), absl::Milliseconds(1));
  EXPECT_EQ(mixed->clocks(), Ms({10, 45, 55}));
  EXPECT_EQ(seconds->clocks(), Ms({10, 45, 50}));
}

// A 1 ms period on a 1 ms tick: after its run at 1 ms the worker stalls.
struct Backlog {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::shared_ptr<Runs> runs = std::make_shared<Runs>();
  Backlog() {
    EXPECT_TRUE(t.timer
                    ->newPeriodic(Recorder(runs, t.clock),
                                  absl::Milliseconds(1), absl::Milliseconds(1),
                                  MissedRuns::kBurst)
                    .ok());
    t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  }
};

TEST(MissedRunsTest, BurstAfterAThousandPeriodsRunsEveryMissedRun) {
  Backlog b;
  b.t.clock->AdvanceAndSettle(absl::Milliseconds(1000));  // to 1001 ms
  std::vector<int64_t> deadlines = b.runs->deadlines();
  ASSERT_EQ(deadlines.size(), 1001u);  // 1, then 2 (late) and 3..1001
  for (size_t i = 0; i < deadlines.size(); ++i) {
    EXPECT_EQ(deadlines[i], static_cast<int64_t>(i + 1) * kMs) << i;
  }
  EXPECT_EQ(b.runs->clocks().back(), 1001 * kMs);
  b.t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(b.runs->deadlines().back(), 1002 * kMs);
  EXPECT_EQ(b.t.timer->metrics().expired, 1002);
  EXPECT_EQ(b.t.timer->metrics().lateness.count(), 1002);
}

TEST(MissedRunsTest, BurstBeyondTheBoundRunsOnlyTheLatestMissedRuns) {
  Backlog b;
  b.t.clock->AdvanceAndSettle(absl::Milliseconds(5000));  // to 5001 ms
  // The late run due at 2 ms finds 4999 runs missed (3..5001): the 3975
  // oldest are skipped, the kMaxBurstRuns latest run.
  const std::vector<int64_t> deadlines = b.runs->deadlines();
  ASSERT_EQ(deadlines.size(), static_cast<size_t>(2 + kMaxBurstRuns));
  EXPECT_EQ(deadlines[1], 2 * kMs);
  const int64_t first_kept = 5001 - kMaxBurstRuns + 1;
  for (int64_t i = 0; i < kMaxBurstRuns; ++i) {
    EXPECT_EQ(deadlines[2 + i], (first_kept + i) * kMs) << i;
  }
  b.t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(b.runs->deadlines().back(), 5002 * kMs);
  EXPECT_EQ(b.runs->clocks().back(), 5002 * kMs);
  EXPECT_EQ(b.t.timer->metrics().expired, 3 + kMaxBurstRuns);
}

TEST(MissedRunsTest, CancelFromABurstRunIsTheLastRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  Timeout timeout = t.timer
                        ->newPeriodic(
                            [runs, clock = t.clock](const Timeout& self) {
                              runs->Add(clock->NowNanos(), DeadlineNanos(self));
                              if (runs->clocks().size() == 3) {
                                EXPECT_TRUE(self.cancel());
                              }
                            },
                            absl::Milliseconds(10), absl::Milliseconds(10),
                            MissedRuns::kBurst)
                        .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(45));  // 20 late, 30..50 missed
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  EXPECT_EQ(runs->deadlines(), Ms({10, 20, 30}));
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().expired, 3);
}

TEST(MissedRunsTest, CancelAllFromABurstRunEndsIt) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(
          [runs, clock = t.clock](const Timeout& self) {
            runs->Add(clock->NowNanos(), DeadlineNanos(self));
            if (runs->clocks().size() == 2) {
              EXPECT_EQ(self.timer()->cancelAll(), 1);
            }
          },
          absl::Milliseconds(10), absl::Milliseconds(10), MissedRuns::kBurst)
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(50));  // 10 late, 20..50 missed
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  EXPECT_EQ(runs->deadlines(), Ms({10, 20}));
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(MissedRunsTest, ResetFromABurstRunEndsItAndTheGridRestarts) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(
          [runs, clock = t.clock](const Timeout& self) {
            runs->Add(clock->NowNanos(), DeadlineNanos(self));
            if (runs->clocks().size() == 3) {
              EXPECT_TRUE(self.reset(absl::Milliseconds(25)));
            }
          },
          absl::Milliseconds(10), absl::Milliseconds(10), MissedRuns::kBurst)
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(45));  // 20 late, 30..50 missed
  t.clock->AdvanceInSteps(absl::Milliseconds(30), absl::Milliseconds(1));
  // The burst stops after the run due at 30; then 55 + 25 = 80, and every
  // 10 ms from there.
  EXPECT_EQ(runs->clocks(), Ms({10, 55, 55, 80}));
  EXPECT_EQ(runs->deadlines(), Ms({10, 20, 30, 80}));
}

TEST(MissedRunsTest, ResetMovesTheNextRunAndTheGridRestartsUnderEveryPolicy) {
  for (MissedRuns policy :
       {MissedRuns::kSkip, MissedRuns::kBurst, MissedRuns::kDelay}) {
    ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
    auto runs = std::make_shared<Runs>();
    Timeout timeout =
        t.timer
            ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                          absl::Milliseconds(10), policy)
            .value();
    t.clock->AdvanceInSteps(absl::Milliseconds(12), absl::Milliseconds(1));
    ASSERT_TRUE(timeout.resetAt(TimePoint(15ms)));
    t.clock->AdvanceAndSettle(absl::Milliseconds(40));  // stalled to 52
    t.clock->AdvanceInSteps(absl::Milliseconds(4), absl::Milliseconds(1));
    // The grid restarts at 15: 25, 35 and 45 are missed at 52.
    std::vector<int64_t> clocks = Ms({10, 52, 55});
    std::vector<int64_t> deadlines = Ms({10, 15, 55});
    if (policy == MissedRuns::kBurst) {
      clocks = Ms({10, 52, 52, 52, 52, 55});
      deadlines = Ms({10, 15, 25, 35, 45, 55});
    } else if (policy == MissedRuns::kDelay) {
      clocks = Ms({10, 52});
      deadlines = Ms({10, 15});
    }
    EXPECT_EQ(runs->clocks(), clocks) << static_cast<int>(policy);
    EXPECT_EQ(runs->deadlines(), deadlines) << static_cast<int>(policy);
    EXPECT_EQ(DeadlineNanos(timeout),
              policy == MissedRuns::kDelay ? 62 * kMs : 65 * kMs);
  }
}

// A timer on a 1 ms tick whose task_executor is `executor` (built on the
// timer's clock).
struct ExecutorTimer {
  std::shared_ptr<QueueExecutor> executor;
  ManualTimer t;

  // A periodic timeout due every 10 ms from 10 ms under `policy`.
  Timeout Periodic(MissedRuns policy) {
    return t.timer
        ->newPeriodic([] {}, absl::Milliseconds(10), absl::Milliseconds(10),
                      policy)
        .value();
  }
  // `ms` times: the executor runs what it holds, then the clock moves 1 ms.
  void RunEachMillisecond(int ms) {
    for (int i = 0; i < ms; ++i) {
      executor->RunAll();
      t.clock->AdvanceAndSettle(absl::Milliseconds(1));
    }
  }
};
ExecutorTimer MakeExecutorTimer(absl::Duration slack) {
  auto clock = std::make_shared<ManualClock>();
  auto executor = std::make_shared<QueueExecutor>(clock);
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.slack = slack;
  options.clock = clock;
  options.task_executor = PostTo(executor);
  ExecutorTimer e{executor, {clock, Timer::Create(options).value()}};
  return e;
}

// Run 10 is handed over and held until 37 ms, past the runs due at 20 and
// 30; from then on the executor runs what it holds every millisecond.
std::vector<int64_t> HandOversWithASlowExecutor(MissedRuns policy) {
  ExecutorTimer e = MakeExecutorTimer(absl::Milliseconds(1));
  e.Periodic(policy);
  e.t.clock->AdvanceInSteps(absl::Milliseconds(37), absl::Milliseconds(1));
  e.RunEachMillisecond(52 - 37);
  EXPECT_EQ(e.t.timer->metrics().expired,
            static_cast<int64_t>(e.executor->handed_at().size()));
  return e.executor->handed_at();
}

TEST(MissedRunsTest, WithAnExecutorRunsNeverOverlapUnderEveryPolicy) {
  // kSkip skips what comes due while the executor holds a run.
  EXPECT_EQ(HandOversWithASlowExecutor(MissedRuns::kSkip), Ms({10, 40, 50}));
  // kBurst keeps the runs due at 20 and 30; each waits for the one before
  // to leave the executor, then the grid goes on.
  EXPECT_EQ(HandOversWithASlowExecutor(MissedRuns::kBurst),
            Ms({10, 38, 39, 40, 50}));
  // kDelay keeps the run due at 20, late at 38: the grid moves to 48.
  EXPECT_EQ(HandOversWithASlowExecutor(MissedRuns::kDelay), Ms({10, 38, 48}));
}

TEST(MissedRunsTest, ABurstOnAnExecutorThatRunsAtOnceGoesBackToBack) {
  ManualTimer t = MakeManualTimer([] {
    TimerOptions options = Tick(absl::Milliseconds(1));
    options.task_executor = [](absl::AnyInvocable<void()> f) { f(); };
    return options;
  }());
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(
          [runs, clock = t.clock] { runs->Add(clock->NowNanos(), 0); },
          absl::Milliseconds(10), absl::Milliseconds(10), MissedRuns::kBurst)
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Milliseconds(45));
  t.clock->AdvanceAndSettle(absl::Milliseconds(5));
  EXPECT_EQ(runs->clocks(), Ms({10, 55, 55, 55, 55, 60}));
  EXPECT_EQ(t.timer->metrics().lateness.max(), absl::Milliseconds(35));
}

TEST(MissedRunsTest, CancelWhileABurstWaitsForTheExecutor) {
  ExecutorTimer e = MakeExecutorTimer(absl::Milliseconds(1));
  Timeout timeout = e.Periodic(MissedRuns::kBurst);
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  e.executor->RunAll();
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(45));  // 20 handed over
  ASSERT_TRUE(timeout.cancel());  // 30, 40 and 50 were waiting
  e.RunEachMillisecond(10);
  EXPECT_EQ(e.executor->handed_at(), Ms({10, 55}));
  EXPECT_EQ(e.t.timer->pendingTimeouts(), 0);
}

TEST(MissedRunsTest, ResetWhileABurstWaitsForTheExecutorEndsIt) {
  ExecutorTimer e = MakeExecutorTimer(absl::Milliseconds(1));
  Timeout timeout = e.Periodic(MissedRuns::kBurst);
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  e.executor->RunAll();
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(45));  // 20 handed over
  ASSERT_TRUE(timeout.resetAt(TimePoint(60ms)));
  e.RunEachMillisecond(16);
  EXPECT_EQ(e.executor->handed_at(), Ms({10, 55, 60, 70}));
}

// With a slack of 0 the worker wakes for deadlines, not tick ends; a run
// waiting for the executor has a deadline that has passed, and must not
// make it wake at once, pass after pass.
TEST(MissedRunsTest, ARunWaitingForTheExecutorWakesTheWorkerOnceATick) {
  ExecutorTimer e = MakeExecutorTimer(absl::ZeroDuration());
  e.Periodic(MissedRuns::kBurst);
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  e.t.clock->AdvanceAndSettle(absl::Milliseconds(25));  // the run at 20 waits
  const int64_t wakeups = e.t.timer->metrics().wakeups;
  e.t.clock->AdvanceInSteps(absl::Milliseconds(10), absl::Milliseconds(1));
  EXPECT_LE(e.t.timer->metrics().wakeups - wakeups, 10);
  EXPECT_EQ(e.executor->handed_at(), Ms({10}));
  e.RunEachMillisecond(1);
  EXPECT_EQ(e.executor->handed_at(), Ms({10, 46}));
  // The executor holds the run handed over at 46, and with it the timer the
  // executor belongs to: run it, or neither is ever freed.
  e.executor->RunAll();
}

// The same with the waiting run's deadline inside the tick in progress: the
// wheel orders that tick's bucket by deadline, and the run is still looked
// at once a tick, as the next tick begins.
TEST(MissedRunsTest, ARunWaitingForTheExecutorWithinTheTickWakesOnceATick) {
  constexpr int64_t kUs = kMs / 1000;
  ExecutorTimer e = MakeExecutorTimer(absl::ZeroDuration());
  e.t.timer
      ->newPeriodic([] {}, absl::Microseconds(10300), absl::Milliseconds(10),
                    MissedRuns::kBurst)
      .value();
  e.t.clock->AdvanceAndSettle(absl::Microseconds(10300));
  // 20.5 ms: the run due at 20.3 ms, in the tick in progress, waits.
  e.t.clock->AdvanceAndSettle(absl::Microseconds(10200));
  const int64_t wakeups = e.t.timer->metrics().wakeups;
  e.t.clock->AdvanceInSteps(absl::Microseconds(3100), absl::Microseconds(100));
  EXPECT_LE(e.t.timer->metrics().wakeups - wakeups, 40);
  EXPECT_EQ(e.executor->handed_at(), std::vector<int64_t>{10300 * kUs});
  e.executor->RunAll();  // 23.6 ms: handed over as tick 24 begins
  e.t.clock->AdvanceAndSettle(absl::Microseconds(500));
  EXPECT_EQ(e.executor->handed_at(),
            (std::vector<int64_t>{10300 * kUs, 24100 * kUs}));
  e.executor->RunAll();
}

TEST(MissedRunsTest, ABurstWithAZeroSlackGoesBackToBack) {
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.slack = absl::ZeroDuration();
  ManualTimer t = MakeManualTimer(std::move(options));
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(Recorder(runs, t.clock), absl::Microseconds(300),
                    absl::Microseconds(300), MissedRuns::kBurst)
      .value();
  t.clock->AdvanceAndSettle(absl::Microseconds(1000));  // 300 late, 600, 900
  EXPECT_EQ(runs->clocks(), std::vector<int64_t>(3, 1000 * 1000));
  EXPECT_EQ(runs->deadlines(),
            (std::vector<int64_t>{300 * 1000, 600 * 1000, 900 * 1000}));
}

// The next-run arithmetic at the ends of int64 (also under UBSan).
TEST(MissedRunsTest, NextRunNeverOverflows) {
  constexpr MissedRuns kSkip = MissedRuns::kSkip;
  constexpr MissedRuns kBurst = MissedRuns::kBurst;
  constexpr MissedRuns kDelay = MissedRuns::kDelay;
  // Every int64 reading behind, by a period of 1 ns.
  EXPECT_EQ(TaskRunner::NextRun(kSkip, INT64_MIN, 1, INT64_MAX), INT64_MAX);
  EXPECT_EQ(TaskRunner::NextRun(kBurst, INT64_MIN, 1, INT64_MAX),
            INT64_MAX - kMaxBurstRuns + 1);
  EXPECT_EQ(TaskRunner::NextRun(kDelay, INT64_MIN, 1, INT64_MAX), INT64_MAX);
  // A period of INT64_MAX.
  EXPECT_EQ(TaskRunner::NextRun(kSkip, 0, INT64_MAX, INT64_MAX), INT64_MAX);
  EXPECT_EQ(TaskRunner::NextRun(kBurst, 0, INT64_MAX, INT64_MAX), INT64_MAX);
  EXPECT_EQ(TaskRunner::NextRun(kDelay, 0, INT64_MAX, INT64_MAX), INT64_MAX);
  EXPECT_EQ(TaskRunner::NextRun(kBurst, INT64_MIN, INT64_MAX, INT64_MAX), -1);
  // On time, next to INT64_MAX: the next run never comes.
  for (MissedRuns p : {kSkip, kBurst, kDelay}) {
    EXPECT_EQ(TaskRunner::NextRun(p, INT64_MAX - 5, 10, INT64_MAX - 5),
              INT64_MAX);
    EXPECT_EQ(TaskRunner::NextRun(p, 100, 30, 50), 130);  // not late
  }
  // Negative readings: due -100, period 30, done at -5 (3 runs missed).
  EXPECT_EQ(TaskRunner::NextRun(kSkip, -100, 30, -5), 20);
  EXPECT_EQ(TaskRunner::NextRun(kBurst, -100, 30, -5), -70);
  EXPECT_EQ(TaskRunner::NextRun(kDelay, -100, 30, -5), 25);
  EXPECT_FALSE(TaskRunner::DueBy(INT64_MAX, INT64_MAX));
  EXPECT_TRUE(TaskRunner::DueBy(INT64_MAX - 1, INT64_MAX));
}

// A period of 1 ns: a stall of 2^62 ns is a backlog of 2^62 runs, of which
// a burst runs kMaxBurstRuns; a second one to the end of the clock leaves
// INT64_MAX, a run that never comes, as the next; kDelay's next run
// saturates there too. (Clock readings more than INT64_MAX ns after the
// timer's start are beyond what a timer counts, so the clock starts at 0.)
TEST(MissedRunsTest, HugeBacklogsUpToTheEndOfTheClock) {
  constexpr int64_t kStalledTo = int64_t{1} << 62;
  for (MissedRuns policy : {MissedRuns::kBurst, MissedRuns::kDelay}) {
    auto clock = std::make_shared<ManualClock>(0);
    TimerOptions options = Tick(absl::Nanoseconds(1), 4);
    options.clock = clock;
    auto timer = Timer::Create(options).value();
    auto runs = std::make_shared<Runs>();
    timer
        ->newPeriodic(Recorder(runs, clock), absl::Nanoseconds(1),
                      absl::Nanoseconds(1), policy)
        .value();
    clock->AdvanceAndSettle(absl::Nanoseconds(1));
    clock->AdvanceAndSettle(absl::Nanoseconds(kStalledTo - 1));
    clock->AdvanceAndSettle(absl::Nanoseconds(INT64_MAX));  // saturates
    ASSERT_EQ(clock->NowNanos(), INT64_MAX);
    const std::vector<int64_t> at = runs->deadlines();
    if (policy == MissedRuns::kBurst) {
      // 1; 2 late at 2^62, then the kMaxBurstRuns latest grid times up to
      // 2^62; 2^62 + 1 late at INT64_MAX, then the kMaxBurstRuns - 1 latest
      // before INT64_MAX.
      ASSERT_EQ(at.size(), static_cast<size_t>(2 + 2 * kMaxBurstRuns));
      EXPECT_EQ(at[1], 2);
      EXPECT_EQ(at[2], kStalledTo - kMaxBurstRuns + 1);
      EXPECT_EQ(at[1 + kMaxBurstRuns], kStalledTo);
      EXPECT_EQ(at[2 + kMaxBurstRuns], kStalledTo + 1);
      EXPECT_EQ(at[3 + kMaxBurstRuns], INT64_MAX - kMaxBurstRuns + 1);
      EXPECT_EQ(at.back(), INT64_MAX - 1);
    } else {
      EXPECT_EQ(at, (std::vector<int64_t>{1, 2, kStalledTo + 1}));
    }
    EXPECT_EQ(timer->metrics().expired, static_cast<int64_t>(at.size()));
    EXPECT_EQ(timer->pendingTimeouts(), 1);
    EXPECT_EQ(timer->stop().value().size(), 1u);
  }
}

}  // namespace
}  // namespace tickwheel
