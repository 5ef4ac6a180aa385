// Tests for DelayNanos() in worker/nanos.h: the inline path and the
// library's agree.

#include "tickwheel/worker/nanos.h"

#include <cstdint>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "absl/time/time.h"

namespace tickwheel::internal {
namespace {

int64_t Library(absl::Duration d) {
  return std::max<int64_t>(0, absl::ToInt64Nanoseconds(d));
}

TEST(DurationNanosTest, MatchesTheLibraryAtTheEdges) {
  const absl::Duration edge = absl::Seconds(int64_t{1} << 33);
  const absl::Duration cases[] = {
      absl::ZeroDuration(),
      absl::Nanoseconds(1),
      absl::Nanoseconds(1) / 4,  // a quarter nanosecond truncates to 0
      absl::Nanoseconds(3) / 4,
      absl::Nanoseconds(999'999'999),
      absl::Seconds(1),
      absl::Milliseconds(1500),
      absl::Hours(24 * 365),
      edge - absl::Nanoseconds(1),
      edge,
      edge + absl::Nanoseconds(1),
      absl::Seconds(std::numeric_limits<int64_t>::max() / 1'000'000'000),
      absl::Seconds(std::numeric_limits<int64_t>::max()),
      absl::InfiniteDuration(),
      -absl::Nanoseconds(1),
      -absl::Nanoseconds(1) / 4,
      -absl::Seconds(5),
      -absl::InfiniteDuration(),
  };
  for (absl::Duration d : cases) {
    EXPECT_EQ(DelayNanos(d), Library(d)) << d;
  }
  EXPECT_EQ(DelayNanos(absl::InfiniteDuration()),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(DelayNanos(-absl::Seconds(5)), 0);
}

TEST(DurationNanosTest, MatchesTheLibraryOnRandomDelays) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    // Quarter nanoseconds over every magnitude up to ~2^62.
    const int shift = static_cast<int>(rng() % 63);
    const auto quarters = static_cast<int64_t>(rng() >> (1 + shift));
    const absl::Duration d =
        absl::Nanoseconds(quarters) / 4 * (rng() % 2 == 0 ? 1 : -1);
    ASSERT_EQ(DelayNanos(d), Library(d)) << d;
    const absl::Duration s =
        absl::Seconds(static_cast<int64_t>(rng() >> shift));
    ASSERT_EQ(DelayNanos(s), Library(s)) << s;
  }
}

}  // namespace
}  // namespace tickwheel::internal
