// tests/destruction_test.cc
// -----------------------------------------------------------------------------
// Destroying a Timer, on a ManualClock: it stops the timer, destroys every
// task not yet run without running it (even with handles still held, which
// then read cancelled and stay safe to use), and joins the worker. A task may
// destroy its own Timer: the worker finishes the shutdown on its own thread.
// (Destruction racing cancel() on other threads is in
// races_on_shared_handles_test, and the allowed order "stop, let producers
// finish, destroy" in races_with_producers_test.)

#include <atomic>
#include <memory>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(DestructionTest, DestructorWithoutStopDestroysTasksWithoutRunningThem) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  auto queued = std::make_shared<Probe>();
  Timeout held =
      t.timer->newTimeout(ProbeTask(probe), absl::Seconds(10)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.timer->newTimeout(ProbeTask(queued), absl::Seconds(10)).value();
  t.timer.reset();
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_EQ(queued->runs.load(), 0);
  // Destroyed although a handle is still held.
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_TRUE(queued->captures_destroyed.load());
  EXPECT_TRUE(held.isCancelled());
  EXPECT_FALSE(held.cancel());  // safe after the Timer is gone
  EXPECT_TRUE(held.takeTask() == nullptr);
  EXPECT_EQ(t.clock->SleeperCount(), 0);
}

// The destroying task returns normally; the worker then stops its pass (the
// task due in the same tick after it does not run), destroys what is left
// unrun, and unregisters from the clock, with nobody to join it.
TEST(DestructionTest, TaskDestroysItsOwnTimer) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto same_tick = std::make_shared<Probe>(), later = std::make_shared<Probe>();
  std::atomic<bool> destroyed{false};
  Timeout later_handle =
      t.timer->newTimeout(ProbeTask(later), absl::Seconds(1)).value();
  ASSERT_TRUE(t.timer
                  ->newTimeout(
                      [&](const Timeout&) {
                        t.timer.reset();  // from the worker thread: the worker
                                          // finishes shutdown
                        destroyed = true;
                      },
                      absl::Milliseconds(10))
                  .ok());
  Timeout same_tick_handle =
      t.timer->newTimeout(ProbeTask(same_tick), absl::Milliseconds(10)).value();
  // AwaitIdle returns once the detached worker has finished and unregistered.
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(t.timer, nullptr);
  EXPECT_EQ(t.clock->SleeperCount(), 0);
  for (const auto& p : {same_tick, later}) {
    EXPECT_EQ(p->runs.load(), 0);  // the walk stopped at the destroyer
    EXPECT_TRUE(p->captures_destroyed.load());
  }
  EXPECT_TRUE(same_tick_handle.isCancelled() && later_handle.isCancelled());
  EXPECT_FALSE(same_tick_handle.cancel());
}

}  // namespace
}  // namespace tickwheel
