// tests/cancel_all_test.cc
// -----------------------------------------------------------------------------
// Timer::cancelAll(): every timeout pending at the call is cancelled (queued
// ones the worker has not filed yet, filed ones, periodic ones), their tasks
// destroyed before it returns, the timer keeps running; from any thread,
// including a task; 0 after stop(), and then it touches nothing.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CaptureGuard;
using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::LiveCount;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;
using ::tickwheel::testing::WaitUntil;

TEST(CancelAllTest, CancelsEveryPendingTimeoutAndTheTimerGoesOn) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> timeouts;
  auto add = [&](absl::Duration delay) {
    probes.push_back(std::make_shared<Probe>());
    timeouts.push_back(
        t.timer->newTimeout(ProbeTask(probes.back()), delay).value());
  };
  for (int i = 0; i < 40; ++i) add(absl::Milliseconds(5 + i));  // to be filed
  t.clock->AwaitIdle();
  for (int i = 0; i < 40; ++i) add(absl::Seconds(1 + i));  // maybe queued
  auto periodic = std::make_shared<Probe>();
  Timeout p = t.timer
                  ->newPeriodic([periodic, g = CaptureGuard(periodic)] {},
                                absl::Milliseconds(1), absl::Milliseconds(1))
                  .value();
  EXPECT_EQ(t.timer->cancelAll(), 81);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 81);
  for (size_t i = 0; i < probes.size(); ++i) {
    EXPECT_TRUE(probes[i]->captures_destroyed.load()) << i;
    EXPECT_TRUE(timeouts[i].isCancelled()) << i;
    EXPECT_FALSE(timeouts[i].cancel()) << i;
  }
  EXPECT_TRUE(periodic->captures_destroyed.load());
  EXPECT_TRUE(p.isCancelled());
  t.clock->AdvanceInSteps(absl::Seconds(2), absl::Milliseconds(10));
  for (const auto& probe : probes) EXPECT_EQ(probe->runs.load(), 0);
  // Still running: new timeouts are scheduled and run.
  auto after = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(after), absl::Milliseconds(1)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(after->runs.load(), 1);
  EXPECT_EQ(t.timer->cancelAll(), 0);
}

TEST(CancelAllTest, FromATaskCancelsTheOthersAndItsOwnPeriodicRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::vector<std::shared_ptr<Probe>> probes;
  for (int i = 0; i < 10; ++i) {
    probes.push_back(std::make_shared<Probe>());
    t.timer->newTimeout(ProbeTask(probes.back()), absl::Milliseconds(3 + i))
        .value();
  }
  std::atomic<int64_t> cancelled{-1};
  std::atomic<int> runs{0};
  Timeout self = t.timer
                     ->newPeriodic(
                         [&](const Timeout& me) {
                           ++runs;
                           cancelled = me.timer()->cancelAll();
                         },
                         absl::Milliseconds(2), absl::Milliseconds(1))
                     .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  EXPECT_EQ(cancelled.load(), 11);  // ten one-shots and the periodic itself
  EXPECT_EQ(runs.load(), 1) << "the run that cancelled it was its last";
  EXPECT_TRUE(self.isCancelled());
  for (const auto& probe : probes) {
    EXPECT_EQ(probe->runs.load(), 0);
    EXPECT_TRUE(probe->captures_destroyed.load());
  }
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CancelAllTest, AfterStopReturnsZero) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  EXPECT_EQ(t.timer->cancelAll(), 0);  // never started
  t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  EXPECT_EQ(t.timer->stop().value().size(), 1u);
  EXPECT_EQ(t.timer->cancelAll(), 0);
}

// A task that calls cancelAll() while another thread's stop() waits for it
// (the timer closed, the worker not yet joined): 0, and it touches nothing,
// so that stop() returns every timeout still pending, tasks inside.
TEST(CancelAllTest, FromATaskAfterStopBeganTouchesNothing) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  Timer* timer = t.timer.get();
  std::atomic<bool> running{false};
  std::atomic<int64_t> cancelled_inside{-1};
  timer
      ->newTimeout(
          [&] {
            running = true;
            // stop() closes the timer before it joins the worker: wait for
            // that (scheduling fails), with a bound far beyond any machine.
            WaitUntil(
                [&] {
                  return !timer->newTimeout([] {}, absl::Seconds(1)).ok();
                },
                absl::Seconds(60));
            cancelled_inside = timer->cancelAll();
          },
          absl::Milliseconds(1))
      .value();
  auto probe = std::make_shared<Probe>();
  for (int i = 0; i < 3; ++i) {
    timer->newTimeout(ProbeTask(probe), absl::Seconds(10 + i)).value();
  }
  t.clock->AwaitIdle();
  t.clock->Advance(absl::Milliseconds(1));
  while (!running.load()) std::this_thread::yield();
  std::vector<Timeout> left = timer->stop().value();
  EXPECT_EQ(cancelled_inside.load(), 0);
  // The three, and whatever the task scheduled before the timer closed.
  ASSERT_GE(left.size(), 3u);
  int with_probe = 0;
  for (const Timeout& timeout : left) {
    TimerTask task = timeout.takeTask();
    ASSERT_TRUE(task != nullptr);
    if (DeadlineNanos(timeout) >= 10'000 * kMs) {
      ++with_probe;
      task(timeout);
    }
  }
  EXPECT_EQ(with_probe, 3);
  EXPECT_EQ(probe->runs.load(), 3);
}

// Real clock: threads schedule, cancel and call cancelAll() at once; every
// task ends exactly once (ran, cancelled by one cancel() or one cancelAll(),
// or returned by stop()), and the counts add up.
TEST(CancelAllTest, RacingSchedulersAndCancelsEndEveryTaskOnce) {
  auto timer = Timer::Create(Tick(absl::Milliseconds(1), 64)).value();
  constexpr int kThreads = 3, kEach = 3000;
  std::atomic<int> runs{0}, alive{0}, cancels{0};
  std::atomic<int64_t> cancelled_all{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<Timeout> mine;
      for (int i = 0; i < kEach; ++i) {
        mine.push_back(timer
                           ->newTimeout([&, c = LiveCount(&alive)] { ++runs; },
                                        absl::Microseconds((i * 37) % 3000))
                           .value());
        if (i % 7 == 0 && mine[i / 2].cancel()) ++cancels;
        if (i % 500 == th) cancelled_all += timer->cancelAll();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Timeout> left = timer->stop().value();
  for (const Timeout& l : left) l.takeTask();  // destroyed here
  const int total = kThreads * kEach;
  EXPECT_EQ(runs.load() + cancels.load() + cancelled_all.load() +
                static_cast<int64_t>(left.size()),
            total);
  EXPECT_EQ(alive.load(), 0) << "captures not destroyed";
  EXPECT_EQ(timer->pendingTimeouts(), 0);
}

// A cancel() that has taken its node back out of a lane cell but not yet
// buried the cell leaves the cell unpublished for a moment. The nodes
// published after it in that lane are pending and must still be counted:
// cancelAll() waits for the cell rather than stopping at it. The test holds
// the cancel() at that step itself (the take-back, done through the
// internals), has cancelAll() run meanwhile, then finishes the cancel().
TEST(CancelAllTest, WaitsForACancelThatHasTakenItsNodeOutOfTheLane) {
  using Lane = internal::SharedTimerState::NodeLane;
  ManualTimer t = MakeManualTimer(Tick(absl::Nanoseconds(1)));
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> timeouts;
  auto add = [&] {
    probes.push_back(std::make_shared<Probe>());
    timeouts.push_back(
        t.timer->newTimeout(ProbeTask(probes.back()), absl::Seconds(1))
            .value());
  };
  add();
  t.clock->AwaitIdle();  // #0 filed; the worker sleeps until it is due
  for (int i = 0; i < 3; ++i) add();  // #1..#3 wait in this thread's lane
  internal::TimeoutNode* node = internal::TimeoutAccess::Node(timeouts[1]);
  internal::TimeoutNode::LaneCellPtr cell = node->LaneCell();
  ASSERT_NE(cell, nullptr);
  // The take-back: the cell is empty and unsettled, and the worker's
  // reference to #1 is now ours.
  ASSERT_TRUE(Lane::TakeBackPending(cell, node));
  std::atomic<int64_t> count{-1};
  std::thread all([&] { count = t.timer->cancelAll(); });
  // Give cancelAll() time to reach the cell; the outcome does not depend on
  // whether it did.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(timeouts[1].cancel());  // queued -> cancelled, as the XADD does
  Lane::Bury(cell);
  node->Unref();  // the worker's reference, taken back with the cell
  all.join();
  EXPECT_EQ(count.load(), 3);  // #0 from the wheel, #2 and #3 from the lane
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  for (size_t i = 0; i < probes.size(); ++i) {
    EXPECT_TRUE(timeouts[i].isCancelled()) << i;
    EXPECT_TRUE(probes[i]->captures_destroyed.load()) << i;
  }
  t.clock->AdvanceInSteps(absl::Seconds(2), absl::Milliseconds(100));
  for (const auto& probe : probes) EXPECT_EQ(probe->runs.load(), 0);
}

}  // namespace
}  // namespace tickwheel
