// tests/catch_up_test.cc
// -----------------------------------------------------------------------------
// A worker that falls behind, on a ManualClock: after a jump of the clock, a
// task that blocks for several ticks, or a backlog of timeouts it reaches
// late, it processes every missed tick's work in order, each task in its own
// tick and none before its deadline, and an overdue timeout runs as soon as
// the worker reaches it, not a tick later. A large burst due in one tick does
// not make it fall behind.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::SettlePastHousekeeping;
using ::tickwheel::testing::Tick;

// The clock jumps 100 ticks at once, as for a suspended process: the worker
// processes every missed tick that has work, in order, and counts each as
// caught up (processed a full tick or more after its end).
TEST(CatchUpTest, WorkerCatchesUpMissedTicksInOrder) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  std::vector<int> order;  // written by the worker only
  for (int i : {7, 3, 9, 1, 5}) {
    t.timer
        ->newTimeout([&order, i](const Timeout&) { order.push_back(i); },
                     absl::Milliseconds(i * 30))
        .value();
  }
  t.clock->AdvanceAndSettle(absl::Seconds(1));  // one jump over 100 ticks
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5, 7, 9}));
  const TimerMetrics m = t.timer->metrics();
  EXPECT_EQ(m.ticks, 100);
  EXPECT_EQ(m.catch_up_ticks, 5);  // the five ticks that had work
  EXPECT_GE(m.worst_lateness, absl::Milliseconds(700));
}

// A task blocks while the clock moves on by several ticks: the worker then
// processes every missed tick in order, each task in its own tick, none before
// its deadline.
TEST(CatchUpTest, BlockingTaskMakesLaterOnesCatchUpInOrderNoneEarly) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, release = false;
  struct Run {
    int id;
    int64_t tick;
    int64_t clock_ms;
  };
  std::vector<Run> runs;  // guarded by mu
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(t.timer
                    ->newTimeout(
                        [&, i](const Timeout& self) {
                          std::unique_lock<std::mutex> lock(mu);
                          runs.push_back({i, self.timer()->metrics().ticks,
                                          t.clock->NowNanos() / kMs});
                          if (i == 1) {
                            started = true;
                            cv.notify_all();
                            cv.wait(lock, [&] { return release; });
                          }
                        },
                        absl::Milliseconds(10 * (i + 1)))
                    .ok());  // task i due at tick i
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.clock->Advance(absl::Milliseconds(10));  // task 1 starts and blocks
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return started; });
  }
  t.clock->Advance(absl::Milliseconds(50));  // ticks 2..6 are now overdue
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }
  t.clock->AwaitIdle();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(runs.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(runs[i].id, i);
    EXPECT_EQ(runs[i].tick, i) << "task " << i << " ran in the wrong tick";
    EXPECT_GE(runs[i].clock_ms, 10 * (i + 1)) << "task " << i << " ran early";
  }
  EXPECT_GE(t.timer->metrics().catch_up_ticks, 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);
}

// A burst due in one tick is expired in slices of the worker's budget, back
// to back within that tick: nothing in it waits for a later tick, so nothing
// is late and no tick counts as caught up.
TEST(CatchUpTest, BurstRunsInTheTickItIsDue) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  constexpr int kBurst = 20000;  // five slices
  auto ran = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < kBurst; ++i) {
    t.timer
        ->newTimeout([ran](const Timeout&) { ran->fetch_add(1); },
                     absl::Milliseconds(50))
        .value();
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(49));
  EXPECT_EQ(ran->load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(ran->load(), kBurst);
  EXPECT_EQ(t.timer->metrics().catch_up_ticks, 0);
  EXPECT_EQ(t.timer->metrics().worst_lateness, absl::ZeroDuration());
}

// Timeouts due later than the worker's planned wake-up do not wake it (up to
// a full lane), so a worker that wakes late (here: one clock step far past
// their deadline) finds them still queued, more than one slice of them. Once
// the first slice's tick is processed the rest are overdue; each must run as
// soon as the worker reaches it (the worker expires at once a node that was
// already due when its last pass read the clock), in scheduling order, not a
// tick later.
TEST(CatchUpTest, OverdueBacklogRunsWithoutAnotherTick) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  t.timer->newTimeout([](const Timeout&) {}, absl::Milliseconds(10)).value();
  SettlePastHousekeeping(t);       // now 2 ms; the worker sleeps until 10 ms
  constexpr int kBacklog = 16000;  // four slices; within the fast lane
  auto order = std::make_shared<std::vector<int>>();
  order->reserve(kBacklog);
  const int64_t wakeups = t.timer->metrics().wakeups;
  for (int i = 0; i < kBacklog; ++i) {
    t.timer
        ->newTimeout([order, i](const Timeout&) { order->push_back(i); },
                     absl::Milliseconds(20))
        .value();
  }
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, wakeups);  // due later than planned
  EXPECT_TRUE(order->empty());
  t.clock->Advance(absl::Milliseconds(40));  // to 42 ms, in one step
  t.clock->AwaitIdle();
  ASSERT_EQ(static_cast<int>(order->size()), kBacklog);
  for (int i = 0; i < kBacklog; ++i)
    ASSERT_EQ((*order)[i], i) << "position " << i;
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// The same backlog, with tasks that act on the timer while the worker is
// still taking the backlog in: each cancels the timeout scheduled after it
// (queued in the fast lane, or already filed), and every 100th schedules a
// child with no delay, which must wait for the next tick boundary like any
// timeout a task schedules.
TEST(CatchUpTest, OverdueBacklogTasksMayCancelAndSchedule) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(1), 512));
  t.timer->newTimeout([](const Timeout&) {}, absl::Milliseconds(10)).value();
  SettlePastHousekeeping(t);
  constexpr int kBacklog = 16000;
  auto handles = std::make_shared<std::vector<Timeout>>(kBacklog + 1);
  auto ran = std::make_shared<std::vector<int>>();
  auto children = std::make_shared<int>(0);
  Timer* timer = t.timer.get();
  for (int i = 0; i < kBacklog; ++i) {
    (*handles)[i] =
        t.timer
            ->newTimeout(
                [handles, ran, children, timer, i](const Timeout&) {
                  ran->push_back(i);
                  (*handles)[i + 1].cancel();  // the last one: an empty handle
                  if (i % 100 == 0) {
                    timer
                        ->newTimeout(
                            [children](const Timeout&) { ++*children; },
                            absl::ZeroDuration())
                        .value();
                  }
                },
                absl::Milliseconds(20))
            .value();
  }
  t.clock->AwaitIdle();
  t.clock->Advance(absl::Milliseconds(40));  // one step past them all
  t.clock->AwaitIdle();
  // Each task that ran cancelled the next one before it could run.
  ASSERT_EQ(static_cast<int>(ran->size()), kBacklog / 2);
  for (int k = 0; k < kBacklog / 2; ++k) ASSERT_EQ((*ran)[k], 2 * k);
  EXPECT_EQ(*children, 0);  // due at the next boundary, not in this pass
  EXPECT_EQ(t.timer->pendingTimeouts(), kBacklog / 100);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(*children, kBacklog / 100);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, kBacklog / 2);
}

}  // namespace
}  // namespace tickwheel
