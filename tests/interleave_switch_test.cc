// The interleaving points (base/interleave.h) are on exactly when the
// environment asks for them, so that an interleaved run cannot pass without
// interleaving: `--config=interleave` on a build that did not compile the
// points in fails here instead of running the concurrency tests plainly.

#include <cstdlib>
#include <string_view>

#include "gtest/gtest.h"
#include "tickwheel/base/interleave.h"

namespace tickwheel::internal {
namespace {

TEST(InterleaveSwitchTest, PointsAreOnExactlyWhenTheEnvironmentAsks) {
  const char* env = std::getenv("TICKWHEEL_INTERLEAVE");
  const bool asked = env != nullptr && std::string_view(env) != "" &&
                     std::string_view(env) != "0";
  EXPECT_EQ(InterleavePointsOn(), asked)
      << (asked ? "TICKWHEEL_INTERLEAVE is set, but this build has no "
                  "interleaving points: use --config=interleave with "
                  "--config=asan, tsan or ubsan"
                : "the points are on without TICKWHEEL_INTERLEAVE");
  // A point costs nothing observable either way; it must be callable.
  TICKWHEEL_INTERLEAVE_POINT();
}

}  // namespace
}  // namespace tickwheel::internal
