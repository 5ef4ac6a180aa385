// tests/periodic_test.cc
// -----------------------------------------------------------------------------
// Timer::newPeriodic(): runs on the grid start + initial_delay + k * period,
// never early, never overlapping; missed runs are skipped; one node for all
// runs; it ends only by cancel(), cancelAll() or stop(). On a ManualClock, so
// every run time is exact.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CaptureGuard;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::QueueExecutor;
using ::tickwheel::testing::Tick;

// Records the clock reading of every run.
struct Runs {
  std::mutex mu;
  std::vector<int64_t> at;
  std::vector<int64_t> snapshot() {
    std::lock_guard<std::mutex> lock(mu);
    return at;
  }
};

auto Recorder(std::shared_ptr<Runs> runs, std::shared_ptr<ManualClock> clock) {
  return [runs, clock] {
    std::lock_guard<std::mutex> lock(runs->mu);
    runs->at.push_back(clock->NowNanos());
  };
}

TEST(PeriodicTest, RunsOnTheGridAndNeverEarly) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  Timeout timeout =
      t.timer
          ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(7))
          .value();
  EXPECT_TRUE(timeout.isPeriodic());
  t.clock->AdvanceInSteps(absl::Milliseconds(80), absl::Milliseconds(1));
  const std::vector<int64_t> at = runs->snapshot();
  ASSERT_EQ(at.size(), 11u);  // 10, 17, ..., 80
  for (size_t k = 0; k < at.size(); ++k) {
    EXPECT_EQ(at[k], (10 + 7 * static_cast<int64_t>(k)) * kMs) << "run " << k;
  }
  EXPECT_FALSE(timeout.isExpired());
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_EQ(t.timer->metrics().expired, 11);
  EXPECT_EQ(timeout.deadline(), TimePoint(std::chrono::milliseconds(87)));
}

TEST(PeriodicTest, MissedRunsAreSkipped) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                    absl::Milliseconds(10))
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));  // the run at 10
  t.clock->AdvanceAndSettle(absl::Milliseconds(45));  // 20..50 missed
  t.clock->AdvanceInSteps(absl::Milliseconds(14), absl::Milliseconds(1));
  const std::vector<int64_t> at = runs->snapshot();
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0], 10 * kMs);
  EXPECT_EQ(at[1], 55 * kMs);  // once, late
  EXPECT_EQ(at[2], 60 * kMs);  // then back on the grid, in the future
}

TEST(PeriodicTest, CancelFromItsOwnRunIsItsLast) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  std::atomic<int> cancelled{0};
  Timeout timeout =
      t.timer
          ->newPeriodic(
              [probe, guard = CaptureGuard(probe),
               &cancelled](const Timeout& self) {
                if (probe->runs.fetch_add(1) + 1 == 3 && self.cancel()) {
                  ++cancelled;
                }
              },
              absl::Milliseconds(5), absl::Milliseconds(5))
          .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(50), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 3);
  EXPECT_EQ(cancelled.load(), 1);
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_FALSE(timeout.cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(PeriodicTest, CancelFromOutsideStopsItAndDestroysItsTask) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer
          ->newPeriodic([probe, guard = CaptureGuard(probe)] { ++probe->runs; },
                        absl::Milliseconds(2), absl::Milliseconds(2))
          .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(6), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 3);
  ASSERT_TRUE(timeout.cancel());
  EXPECT_TRUE(probe->captures_destroyed.load());
  t.clock->AdvanceInSteps(absl::Milliseconds(10), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 3);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
}

TEST(PeriodicTest, ResetMovesTheNextRunAndTheGridRestartsFromIt) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  Timeout timeout =
      t.timer
          ->newPeriodic(Recorder(runs, t.clock), absl::Milliseconds(10),
                        absl::Milliseconds(10))
          .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(12), absl::Milliseconds(1));
  ASSERT_TRUE(timeout.reset(absl::Milliseconds(3)));  // next at 15
  t.clock->AdvanceInSteps(absl::Milliseconds(22), absl::Milliseconds(1));
  const std::vector<int64_t> at = runs->snapshot();
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0], 10 * kMs);
  EXPECT_EQ(at[1], 15 * kMs);
  EXPECT_EQ(at[2], 25 * kMs);
}

TEST(PeriodicTest, ResetFromItsOwnRunMovesItsNextRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto runs = std::make_shared<Runs>();
  std::atomic<bool> reset{false};
  t.timer
      ->newPeriodic(
          [runs, clock = t.clock, &reset](const Timeout& self) {
            Recorder(runs, clock)();
            if (!reset.exchange(true)) {
              EXPECT_TRUE(self.reset(absl::Milliseconds(30)));
            }
          },
          absl::Milliseconds(10), absl::Milliseconds(10))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(59), absl::Milliseconds(1));
  const std::vector<int64_t> at = runs->snapshot();
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0], 10 * kMs);
  EXPECT_EQ(at[1], 40 * kMs);
  EXPECT_EQ(at[2], 50 * kMs);
}

TEST(PeriodicTest, StopReturnsItOnceWithItsTask) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer
          ->newPeriodic([probe, guard = CaptureGuard(probe)] { ++probe->runs; },
                        absl::Milliseconds(1), absl::Milliseconds(1))
          .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(3), absl::Milliseconds(1));
  std::vector<Timeout> left = t.timer->stop().value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], timeout);
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_FALSE(timeout.isExpired());
  TimerTask task = timeout.takeTask();
  ASSERT_TRUE(task);
  const int before = probe->runs.load();
  task(timeout);  // the same callable, run by hand
  EXPECT_EQ(probe->runs.load(), before + 1);
  EXPECT_FALSE(probe->captures_destroyed.load());
  task = nullptr;
  EXPECT_TRUE(probe->captures_destroyed.load());
}

TEST(PeriodicTest, WithAnExecutorRunsNeverOverlap) {
  auto executor = std::make_shared<QueueExecutor>();
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.task_executor = PostTo(executor);
  ManualTimer t = MakeManualTimer(std::move(options));
  std::atomic<int> runs{0};
  t.timer
      ->newPeriodic([&] { ++runs; }, absl::Milliseconds(2),
                    absl::Milliseconds(2))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(2), absl::Milliseconds(1));
  // The run at 2 ms is handed over and held: it is still in progress when
  // the runs at 4 and 6 come due, which are skipped.
  t.clock->AdvanceInSteps(absl::Milliseconds(4), absl::Milliseconds(1));
  EXPECT_EQ(executor->RunAll(), 1);
  EXPECT_EQ(runs.load(), 1);
  t.clock->AdvanceInSteps(absl::Milliseconds(2), absl::Milliseconds(1));
  EXPECT_EQ(executor->RunAll(), 1);  // the run at 8 ms
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(t.timer->stop().value().size(), 1u);
}

TEST(PeriodicTest, InvalidPeriodsAreRefused) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  for (absl::Duration period : {absl::ZeroDuration(), -absl::Milliseconds(1),
                                absl::InfiniteDuration()}) {
    absl::StatusOr<Timeout> r =
        t.timer->newPeriodic([] {}, absl::Milliseconds(1), period);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << absl::FormatDuration(period);
  }
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.clock->SleeperCount(), 0) << "a refused call started the worker";
}

TEST(PeriodicTest, TenThousandRunsStayOnTheGrid) {
  ManualTimer t = MakeManualTimer(Tick(absl::Microseconds(100)));
  auto runs = std::make_shared<Runs>();
  t.timer
      ->newPeriodic(Recorder(runs, t.clock), absl::Microseconds(300),
                    absl::Microseconds(300))
      .value();
  t.clock->AdvanceInSteps(absl::Microseconds(300) * 10000,
                          absl::Microseconds(100));
  const std::vector<int64_t> at = runs->snapshot();
  ASSERT_EQ(at.size(), 10000u);
  EXPECT_EQ(at.back(), int64_t{10000} * 300 * 1000) << "the grid drifted";
}

}  // namespace
}  // namespace tickwheel
