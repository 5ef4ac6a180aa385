// tests/repro_pending_release_test.cc
// -----------------------------------------------------------------------------
// Reproducer: an expired task still counted as pending until the worker's
// whole pass ended. Fixed in 6b6c727; runs in //tests:fixed_repros_test.
//
// Worker::Expire() claims a node (kPending -> kExpired) but only increments
// expired_in_pass_; Pass() gives those pending slots back after
// Wheel::Advance() returns. So while a pass runs, pendingTimeouts() counts
// every task the pass has already expired, the running task included, which
// contradicts timer.h ("Timeouts scheduled and neither expired nor
// cancelled"), and max_pending_timeouts rejects newTimeout() calls that the
// documented count allows: a task that reschedules itself (the usual periodic
// pattern) fails with ResourceExhausted when the timer is at its limit, and
// during a catch-up the rejections pile up across many ticks.
//
// Fix: Release(1) in Expire() right after the winning CAS (as before the
// sleeping-worker change), or release before running each task.

#include <atomic>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tickwheel/timer/timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace {

TEST(ReproPendingReleaseTest, TaskReschedulesItselfAtTheLimit) {
  auto clock = std::make_shared<ManualClock>();
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  options.max_pending_timeouts = 1;
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  absl::Status child = absl::UnknownError("task did not run");
  int64_t pending_in_task = -1;
  ASSERT_TRUE(timer->newTimeout([&](const Timeout& self) {
    pending_in_task = self.timer()->pendingTimeouts();
    child = self.timer()->newTimeout([](const Timeout&) {},
                                     absl::Milliseconds(10)).status();
  }, absl::Milliseconds(10)).ok());
  clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(pending_in_task, 0) << "the running task still counts as pending";
  EXPECT_TRUE(child.ok()) << child;
}

TEST(ReproPendingReleaseTest, CatchUpCountsEveryExpiredTask) {
  auto clock = std::make_shared<ManualClock>();
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  std::vector<int64_t> seen;  // worker thread; read after settling
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(timer->newTimeout([&](const Timeout& self) {
      seen.push_back(self.timer()->pendingTimeouts());
    }, absl::Milliseconds(10 * (i + 1))).ok());
  }
  clock->AdvanceAndSettle(absl::Milliseconds(50));  // one catch-up pass
  EXPECT_EQ(seen, (std::vector<int64_t>{4, 3, 2, 1, 0}));
}

}  // namespace
}  // namespace tickwheel
