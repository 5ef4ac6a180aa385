// tests/timeout_handle_test.cc
// -----------------------------------------------------------------------------
// The Timeout handle itself: an empty (default-constructed) handle answers
// every query with "no" and every action with "nothing", also after being
// copied and moved; a non-empty one is a shared reference, so that copies,
// assignments and moves all act on the same scheduled task.

#include <utility>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Tick;

TEST(TimeoutHandleTest, EmptyHandleIsInert) {
  const Timeout empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_EQ(empty.timer(), nullptr);
  EXPECT_FALSE(empty.isExpired());
  EXPECT_FALSE(empty.isCancelled());
  EXPECT_FALSE(empty.cancel());
  EXPECT_TRUE(empty.takeTask() == nullptr);
  Timeout copy = empty, moved = std::move(copy);
  EXPECT_TRUE(moved == empty);
  EXPECT_FALSE(moved.cancel());
}

TEST(TimeoutHandleTest, CopiesAssignmentsAndMovesShareOneTimeout) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  Timeout a =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).value();
  Timeout b = a;
  Timeout c;
  c = b;
  EXPECT_TRUE(a == b && b == c);
  EXPECT_TRUE(c.cancel());
  EXPECT_TRUE(a.isCancelled());
  Timeout moved = std::move(a);
  EXPECT_TRUE(moved.isCancelled());
  EXPECT_EQ(moved.timer(), t.timer.get());
}

}  // namespace
}  // namespace tickwheel
