// tests/include_paths_test.cc
// -----------------------------------------------------------------------------
// The include paths code is written against: "tickwheel/timer/timer.h" and
// "tickwheel/timer/idle_tracker.h" (the canonical ones), and the older
// repository-relative "timer/timer.h" and "timer/idle_tracker.h", which keep
// working in a Bazel workspace that depends on tickwheel. Both name the same
// files, so including both is harmless, and the version macro is there.

#include "timer/idle_tracker.h"
#include "timer/timer.h"

#include <gtest/gtest.h>

#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

TEST(IncludePathsTest, OldAndPrefixedPathsNameTheSameHeaders) {
  auto timer = Timer::Create().value();
  EXPECT_EQ(timer->pendingTimeouts(), 0);
  auto tracker = IdleTracker::Create().value();
  EXPECT_EQ(tracker->metrics().tracked, 0);
  EXPECT_STREQ(TICKWHEEL_VERSION, "0.2.0");
  EXPECT_EQ(TICKWHEEL_VERSION_MAJOR * 10000 + TICKWHEEL_VERSION_MINOR * 100 +
                TICKWHEEL_VERSION_PATCH,
            200);
}

}  // namespace
}  // namespace tickwheel
