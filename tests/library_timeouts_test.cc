// tests/library_timeouts_test.cc
// -----------------------------------------------------------------------------
// Library timeouts (timer/internal/library_timeouts.h), which tickwheel's own
// components schedule on an application's Timer: they run like any other,
// the application's cancelAll() passes them by, wherever they are (still
// queued, filed in the wheel, waiting to be filed again), and the
// application's stop() does not return them but destroys their tasks unrun.

#include <atomic>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/internal/library_timeouts.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::internal::LibraryTimeouts;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(LibraryTimeoutsTest, RunLikeAnyOther) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout lib = LibraryTimeouts::NewTimeout(*t.timer, ProbeTask(probe),
                                            absl::Milliseconds(3))
                    .value();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_TRUE(lib.isExpired());
}

TEST(LibraryTimeoutsTest, CancelAllPassesThemByWhereverTheyAre) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto filed = std::make_shared<Probe>();
  auto queued = std::make_shared<Probe>();
  auto app = std::make_shared<Probe>();
  Timeout a = LibraryTimeouts::NewTimeout(*t.timer, ProbeTask(filed),
                                          absl::Milliseconds(5))
                  .value();
  t.clock->AwaitIdle();  // filed in the wheel
  Timeout b = LibraryTimeouts::NewTimeout(*t.timer, ProbeTask(queued),
                                          absl::Milliseconds(5))
                  .value();  // most likely still in its lane
  Timeout c =
      t.timer->newTimeout(ProbeTask(app), absl::Milliseconds(5)).value();
  EXPECT_EQ(t.timer->cancelAll(), 1);  // the application's own only
  EXPECT_TRUE(c.isCancelled());
  EXPECT_TRUE(app->captures_destroyed.load());
  EXPECT_FALSE(a.isCancelled());
  EXPECT_FALSE(b.isCancelled());
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  t.clock->AdvanceAndSettle(absl::Milliseconds(5));
  EXPECT_EQ(filed->runs.load(), 1);
  EXPECT_EQ(queued->runs.load(), 1);
  EXPECT_EQ(app->runs.load(), 0);
}

TEST(LibraryTimeoutsTest, CancelAllFromATaskPassesThemBy) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto lib = std::make_shared<Probe>();
  std::atomic<int64_t> cancelled{-1};
  LibraryTimeouts::NewTimeout(*t.timer, ProbeTask(lib), absl::Milliseconds(4))
      .value();
  t.timer
      ->newTimeout(
          [&](const Timeout& self) {
            // Scheduled within this pass: still queued when cancelAll() runs.
            LibraryTimeouts::NewTimeout(*self.timer(), ProbeTask(lib),
                                        absl::Milliseconds(2))
                .IgnoreError();
            cancelled = self.timer()->cancelAll();
          },
          absl::Milliseconds(1))
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(cancelled.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  EXPECT_EQ(lib->runs.load(), 2);
}

TEST(LibraryTimeoutsTest, StopDoesNotReturnThemAndDestroysTheirTasks) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto lib = std::make_shared<Probe>();
  auto app = std::make_shared<Probe>();
  Timeout mine =
      LibraryTimeouts::NewTimeout(*t.timer, ProbeTask(lib), absl::Seconds(5))
          .value();
  Timeout theirs =
      t.timer->newTimeout(ProbeTask(app), absl::Seconds(5)).value();
  const std::vector<Timeout> left = t.timer->stop().value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], theirs);
  EXPECT_TRUE(mine.isCancelled());
  EXPECT_TRUE(lib->captures_destroyed.load());
  EXPECT_EQ(lib->runs.load(), 0);
  EXPECT_FALSE(mine.takeTask());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

}  // namespace
}  // namespace tickwheel
