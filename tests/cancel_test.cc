// tests/cancel_test.cc
// -----------------------------------------------------------------------------
// What Timeout::cancel() does, on a ManualClock: before expiry the first call
// wins, the task never runs, and its captures are destroyed and
// pendingTimeouts() drops before cancel() returns; after expiry, and on every
// later call, it returns false and changes nothing. (That a cancel() never
// wakes the worker is in timer_wakeup_test; cancels racing each other through
// one handle are in races_on_shared_handles_test.)

#include <memory>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(CancelTest, CancelBeforeExpiryDestroysCapturesAtOnce) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Seconds(30)).value();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_TRUE(timeout.cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);  // reflected when cancel returns
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_FALSE(timeout.isExpired());
  EXPECT_TRUE(probe->captures_destroyed.load());  // by cancel() itself
  EXPECT_FALSE(timeout.cancel());                 // only the first cancel wins
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  t.clock->AdvanceInSteps(absl::Seconds(31), absl::Seconds(1));
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(timeout.takeTask() == nullptr);
}

TEST(CancelTest, CancelAfterExpiryReturnsFalse) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_TRUE(timeout.isExpired());
  EXPECT_FALSE(timeout.cancel());
  EXPECT_FALSE(timeout.isCancelled());
  EXPECT_TRUE(probe->captures_destroyed.load());  // destroyed after its run
}

// Cancelled right after newTimeout(), within the tick it is due in: usually
// before the worker has taken the node from the producer's lane (cancel()
// takes it back out, and the worker never sees it), else just after the
// worker filed it (the worker unlinks it on its next pass). Either way the
// task never runs and its captures are gone.
TEST(CancelTest, CancelRightAfterNewTimeoutNeverRuns) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(1)).value();
  ASSERT_TRUE(timeout.cancel());
  t.clock->AdvanceInSteps(absl::Milliseconds(50), absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(probe->captures_destroyed.load());
}

}  // namespace
}  // namespace tickwheel
