// tests/local_timer_lifecycle_test.cc
// -----------------------------------------------------------------------------
// LocalTimer's life cycle: stop() returns what is pending, earliest first,
// cancelled, with its task inside, and closes the timer (FailedPrecondition,
// nothing runs, no plan); cancelAll() cancels everything pending, what a
// running task scheduled included, and destroys the tasks; the destructor
// destroys the tasks unrun; max_pending_timeouts refuses with
// ResourceExhausted; cancelAll() after stop() touches nothing; debug builds
// catch a second thread. On a ManualClock.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::LiveCount;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::LogTask;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::RunLog;
using ::tickwheel::testing::StatusMentions;

// Scheduled out of order, some run, one cancelled, a periodic one among
// them: stop() returns the rest by deadline, each cancelled, with a task
// that takeTask() hands out once.
TEST(LocalTimerLifecycleTest, StopReturnsWhatIsPendingEarliestFirst) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  RunLog log;
  const int64_t delays_ms[] = {30, 2, 50, 10, 40, 1};
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 6; ++i) {
    timeouts.push_back(t.timer
                           ->newTimeout(LogTask(&log, i, t.clock),
                                        absl::Milliseconds(delays_ms[i]))
                           .value());
  }
  Timeout periodic =
      t.timer
          ->newPeriodic(LogTask(&log, 6, t.clock), absl::Milliseconds(5),
                        absl::Milliseconds(100))
          .value();
  EXPECT_TRUE(timeouts[4].cancel());   // the one at 40 ms
  EXPECT_EQ(t.AdvanceTo(5 * kMs), 3);  // 1, 2, and the periodic run at 5
  std::vector<Timeout> left = t.timer->stop();
  ASSERT_EQ(left.size(), 4u);
  EXPECT_EQ(left[0], timeouts[3]);  // 10 ms
  EXPECT_EQ(left[1], timeouts[0]);  // 30 ms
  EXPECT_EQ(left[2], timeouts[2]);  // 50 ms
  EXPECT_EQ(left[3], periodic);     // its next run, 105 ms
  EXPECT_EQ(DeadlineNanos(left[3]), 105 * kMs);
  for (const Timeout& timeout : left) {
    EXPECT_TRUE(timeout.isCancelled());
    EXPECT_FALSE(timeout.cancel());
  }
  TimerTask task = left[0].takeTask();
  ASSERT_TRUE(task);
  EXPECT_FALSE(left[0].takeTask());
  task(left[0]);
  EXPECT_EQ(log.Ids(), (std::vector<int>{5, 1, 6, 3}));
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_TRUE(t.timer->stop().empty());
}

// After stop(): every way to schedule fails with FailedPrecondition, and
// nothing is planned, run or cancelled.
TEST(LocalTimerLifecycleTest, AfterStopSchedulingFailsAndNothingRuns) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  EXPECT_TRUE(t.timer->stop().empty());
  const absl::Status once =
      t.timer->newTimeout([] {}, absl::Milliseconds(1)).status();
  EXPECT_EQ(once.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(StatusMentions(once, "stopped")) << once;
  EXPECT_EQ(t.timer->newTimeoutAt([] {}, t.timer->now()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.timer
                ->newPeriodic([] {}, std::chrono::milliseconds(1),
                              std::chrono::milliseconds(1))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 0);
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
  EXPECT_EQ(t.timer->cancelAll(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// cancelAll() cancels every pending timeout, periodic ones too, destroys
// their tasks before it returns, and leaves the timer running.
TEST(LocalTimerLifecycleTest, CancelAllCancelsEverythingAndDestroysTasks) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> alive{0};
  int runs = 0;
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 5; ++i) {
    timeouts.push_back(
        t.timer
            ->newTimeout([&runs, c = LiveCount(&alive)] { ++runs; },
                         absl::Milliseconds(1 + i))
            .value());
  }
  timeouts.push_back(
      t.timer
          ->newPeriodic([&runs, c = LiveCount(&alive)] { ++runs; },
                        absl::Milliseconds(1), absl::Milliseconds(1))
          .value());
  EXPECT_EQ(alive.load(), 6);
  EXPECT_EQ(t.timer->cancelAll(), 6);
  EXPECT_EQ(alive.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
  for (const Timeout& timeout : timeouts) {
    EXPECT_TRUE(timeout.isCancelled());
    EXPECT_FALSE(timeout.cancel());
  }
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 0);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 6);
  t.timer->newTimeout([&runs] { ++runs; }, absl::Milliseconds(1)).value();
  EXPECT_EQ(t.AdvanceTo(11 * kMs), 1);
  EXPECT_EQ(runs, 1);
}

// cancelAll() from a task cancels the timeouts due later in the same
// advance(), the ones that task scheduled, and the task's own periodic
// timeout (its run is the last).
TEST(LocalTimerLifecycleTest, CancelAllFromATaskReachesWhatItScheduled) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  LocalTimer* timer = t.timer.get();
  int later_runs = 0;
  int64_t cancelled = -1;
  Timeout nested;
  t.timer
      ->newPeriodic(
          [&] {
            nested =
                timer->newTimeout([&] { ++later_runs; }, absl::ZeroDuration())
                    .value();
            cancelled = timer->cancelAll();
          },
          absl::Milliseconds(1), absl::Milliseconds(1))
      .value();
  Timeout same_tick =
      t.timer->newTimeout([&] { ++later_runs; }, absl::Milliseconds(1)).value();
  Timeout later =
      t.timer->newTimeout([&] { ++later_runs; }, absl::Milliseconds(5)).value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 1);
  EXPECT_EQ(cancelled, 4);  // itself, the nested one, same tick, later
  EXPECT_TRUE(nested.isCancelled());
  EXPECT_TRUE(same_tick.isCancelled());
  EXPECT_TRUE(later.isCancelled());
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 0);
  EXPECT_EQ(later_runs, 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
}

// Destroying the timer destroys every task not yet run, without running
// it; the handles stay safe to query and cancel.
TEST(LocalTimerLifecycleTest, DestructorDestroysPendingTasksUnrun) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> alive{0};
  int runs = 0;
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 4; ++i) {
    timeouts.push_back(
        t.timer
            ->newTimeout([&runs, c = LiveCount(&alive)] { ++runs; },
                         absl::Milliseconds(1 + i))
            .value());
  }
  timeouts.push_back(
      t.timer
          ->newPeriodic([&runs, c = LiveCount(&alive)] { ++runs; },
                        absl::Milliseconds(1), absl::Milliseconds(1))
          .value());
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 2);
  EXPECT_EQ(alive.load(), 4);  // the one-shot that ran is gone
  t.timer.reset();
  EXPECT_EQ(alive.load(), 0);
  EXPECT_EQ(runs, 2);
  for (const Timeout& timeout : timeouts) EXPECT_FALSE(timeout.cancel());
  EXPECT_TRUE(timeouts[0].isExpired());
  EXPECT_TRUE(timeouts[1].isCancelled());
  EXPECT_FALSE(timeouts[1].takeTask());
}

// max_pending_timeouts: the next newTimeout() fails with ResourceExhausted
// naming both numbers; a slot comes back when a timeout runs or is
// cancelled, and a task may take the slot its own run gave back.
TEST(LocalTimerLifecycleTest, MaxPendingTimeoutsRefusesWithResourceExhausted) {
  LocalTimerOptions options = LocalOptions();
  options.max_pending_timeouts = 2;
  ManualLocalTimer t = MakeLocalTimer(options);
  LocalTimer* timer = t.timer.get();
  absl::Status from_task;
  Timeout first =
      t.timer
          ->newTimeout(
              [&] {
                from_task =
                    timer->newTimeout([] {}, absl::Milliseconds(1)).status();
              },
              absl::Milliseconds(1))
          .value();
  Timeout second = t.timer->newTimeout([] {}, absl::Milliseconds(10)).value();
  const absl::Status full =
      t.timer->newTimeout([] {}, absl::Milliseconds(1)).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(StatusMentions(full, "(3)")) << full;
  EXPECT_TRUE(StatusMentions(full, "(2)")) << full;
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 1);
  EXPECT_TRUE(from_task.ok()) << from_task;
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_TRUE(second.cancel());
  EXPECT_TRUE(t.timer->newTimeout([] {}, absl::Milliseconds(1)).ok());
  EXPECT_EQ(t.timer->newTimeout([] {}, absl::Milliseconds(1)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// stop() from a task: the timer closes, the advance() ends after that task,
// and the next stop() returns what was left, the timeouts the task
// scheduled included.
TEST(LocalTimerLifecycleTest, StopFromATaskEndsTheAdvanceAndLeavesTheRest) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  LocalTimer* timer = t.timer.get();
  RunLog log;
  size_t returned_inside = 99;
  absl::Status after_stop;
  t.timer->newTimeout(LogTask(&log, 0, t.clock), absl::Milliseconds(1)).value();
  t.timer
      ->newTimeout(
          [&](const Timeout&) {
            log.runs.push_back({1, t.NowNanos()});
            timer->newTimeout(LogTask(&log, 9, t.clock), absl::Milliseconds(1))
                .value();
            returned_inside = timer->stop().size();
            after_stop =
                timer->newTimeout([] {}, absl::Milliseconds(1)).status();
          },
          absl::Milliseconds(1))
      .value();
  t.timer->newTimeout(LogTask(&log, 2, t.clock), absl::Milliseconds(1)).value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 2);
  EXPECT_EQ(returned_inside, 0u);
  EXPECT_EQ(after_stop.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(log.Ids(), (std::vector<int>{0, 1}));
  EXPECT_EQ(t.AdvanceTo(5 * kMs), 0);
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
  std::vector<Timeout> left = t.timer->stop();
  ASSERT_EQ(left.size(), 2u);  // task 2, then the one task 1 scheduled
  TimerTask task = left[0].takeTask();
  task(left[0]);
  EXPECT_EQ(log.Ids(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(DeadlineNanos(left[1]), 2 * kMs);
  EXPECT_TRUE(t.timer->stop().empty());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// cancelAll() after a stop() from a task: 0, and it touches nothing, so the
// next stop() still returns every timeout left pending, tasks inside.
TEST(LocalTimerLifecycleTest, CancelAllAfterStopFromATaskTouchesNothing) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  LocalTimer* timer = t.timer.get();
  RunLog log;
  int64_t cancelled_inside = -1;
  t.timer
      ->newTimeout(
          [&](const Timeout&) {
            EXPECT_TRUE(timer->stop().empty());
            cancelled_inside = timer->cancelAll();
          },
          absl::Milliseconds(1))
      .value();
  Timeout later =
      t.timer->newTimeout(LogTask(&log, 1, t.clock), absl::Milliseconds(5))
          .value();
  t.timer
      ->newPeriodic(LogTask(&log, 2, t.clock), absl::Milliseconds(7),
                    absl::Milliseconds(1))
      .value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 1);
  EXPECT_EQ(cancelled_inside, 0);
  EXPECT_EQ(t.timer->cancelAll(), 0);  // and after that advance() returned
  std::vector<Timeout> left = t.timer->stop();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0], later);
  for (Timeout& timeout : left) {
    TimerTask task = timeout.takeTask();
    ASSERT_TRUE(task != nullptr);
    task(timeout);
  }
  EXPECT_EQ(log.Ids(), (std::vector<int>{1, 2}));
}

// The owner thread is checked in every build: the first thread that calls
// an owner-only method binds it (creating the timer elsewhere is fine).
// Here a helper thread's advance() binds it, and the creating thread's
// newTimeout() is refused (tests/local_timer_owner_thread_test.cc has the
// rest).
TEST(LocalTimerLifecycleTest, AnotherThreadsSchedulingCallIsRefused) {
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create().value();
  std::thread([&] { timer->advance(); }).join();
  EXPECT_EQ(timer->newTimeout([] {}, absl::Milliseconds(1)).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace tickwheel
