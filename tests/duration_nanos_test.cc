// tests/duration_nanos_test.cc
// -----------------------------------------------------------------------------
// The one conversion of every delay and period to whole nanoseconds
// (base/nanos.h): DelayNanos() for absl::Duration agrees with the library
// (rounded up), and FromChrono() for std::chrono durations is exact for
// integer counts of any period, rounds up, saturates instead of wrapping,
// maps floating infinities to absl's and refuses NaN. Run under UBSan in CI:
// no conversion may overflow on the way. Also the saturating sums and products
// the tick arithmetic uses.

#include "tickwheel/base/nanos.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <ratio>

#include <gtest/gtest.h>

#include "absl/time/time.h"

namespace tickwheel::internal {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t Library(absl::Duration d) {
  return std::max<int64_t>(
      0, absl::ToInt64Nanoseconds(absl::Ceil(d, absl::Nanoseconds(1))));
}

TEST(DurationNanosTest, AbslDelaysMatchTheLibraryAtTheEdges) {
  const absl::Duration edge = absl::Seconds(int64_t{1} << 33);
  const absl::Duration cases[] = {
      absl::ZeroDuration(),
      absl::Nanoseconds(1),
      absl::Nanoseconds(1) / 4,  // a quarter nanosecond rounds up to 1
      absl::Nanoseconds(3) / 4,
      absl::Nanoseconds(5) / 4,
      absl::Nanoseconds(999'999'999),
      absl::Seconds(1),
      absl::Milliseconds(1500),
      absl::Hours(24 * 365),
      edge - absl::Nanoseconds(1),
      edge,
      edge + absl::Nanoseconds(1),
      absl::Seconds(kMax / 1'000'000'000),
      absl::Seconds(kMax),
      absl::InfiniteDuration(),
      -absl::Nanoseconds(1),
      -absl::Nanoseconds(1) / 4,
      -absl::Seconds(5),
      -absl::InfiniteDuration(),
  };
  for (absl::Duration d : cases) {
    EXPECT_EQ(DelayNanos(d), Library(d)) << d;
  }
  EXPECT_EQ(DelayNanos(absl::Nanoseconds(1) / 4), 1);
  EXPECT_EQ(DelayNanos(absl::InfiniteDuration()), kMax);
  EXPECT_EQ(DelayNanos(-absl::Seconds(5)), 0);
}

TEST(DurationNanosTest, AbslDelaysMatchTheLibraryOnRandomDelays) {
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

// FromChrono() in nanoseconds (it never returns a fraction).
template <typename Rep, typename Period>
int64_t Nanos(std::chrono::duration<Rep, Period> d) {
  const std::optional<absl::Duration> converted = FromChrono(d);
  EXPECT_TRUE(converted.has_value());
  return absl::ToInt64Nanoseconds(converted.value_or(absl::ZeroDuration()));
}

// The exact value, rounded up and saturated, by a different route: long
// division of the rational count * num * 10^9 / den, in unsigned 128-bit
// pieces, for counts whose product fits.
template <typename Period>
int64_t Reference(int64_t count) {
  using N = std::ratio_multiply<Period, std::ratio<1'000'000'000>>;
  const __int128 num = static_cast<__int128>(count) * N::num;
  const __int128 q = num / N::den + (num % N::den > 0 ? 1 : 0);
  if (q > kMax) return kMax;
  if (q < kMin) return kMin;
  return static_cast<int64_t>(q);
}

template <typename Period>
void CheckIntegerPeriod(std::mt19937_64& rng) {
  using D = std::chrono::duration<int64_t, Period>;
  const int64_t edges[] = {0,    1,        -1,       2,         59,
                           60,   61,       -59,      -61,       kMax,
                           kMin, kMax - 1, kMin + 1, kMax / 60, kMin / 60};
  for (int64_t c : edges) {
    EXPECT_EQ(Nanos(D(c)), Reference<Period>(c)) << c;
  }
  for (int i = 0; i < 20000; ++i) {
    const int shift = static_cast<int>(rng() % 64);
    const auto c =
        static_cast<int64_t>(rng() >> shift) * (rng() % 2 == 0 ? 1 : -1);
    ASSERT_EQ(Nanos(D(c)), Reference<Period>(c)) << c;
  }
}

TEST(DurationNanosTest, IntegerChronoCountsAreExactForOddPeriods) {
  std::mt19937_64 rng(7);
  CheckIntegerPeriod<std::ratio<1, 60>>(rng);  // 1/60 s: 50'000'000/3 ns
  CheckIntegerPeriod<std::ratio<7, 3>>(rng);
  CheckIntegerPeriod<std::ratio<1, 3'000'000'000>>(rng);  // a third of a ns
  CheckIntegerPeriod<std::nano>(rng);
  CheckIntegerPeriod<std::milli>(rng);
  CheckIntegerPeriod<std::ratio<3600>>(rng);
  CheckIntegerPeriod<std::pico>(rng);
}

TEST(DurationNanosTest, IntegerChronoCountsSaturateInsteadOfWrapping) {
  using Sixtieths = std::chrono::duration<int64_t, std::ratio<1, 60>>;
  EXPECT_EQ(Nanos(Sixtieths(kMax)), kMax);
  EXPECT_EQ(Nanos(Sixtieths(kMin)), kMin);
  EXPECT_EQ(Nanos(std::chrono::hours(kMax)), kMax);
  EXPECT_EQ(Nanos(std::chrono::hours(kMin)), kMin);
  // A period whose nanoseconds leave intmax_t.
  using Exa = std::chrono::duration<int64_t, std::exa>;
  EXPECT_EQ(Nanos(Exa(1)), kMax);
  EXPECT_EQ(Nanos(Exa(-1)), kMin);
  EXPECT_EQ(Nanos(Exa(0)), 0);
  // Unsigned counts beyond int64.
  using U = std::chrono::duration<uint64_t, std::nano>;
  EXPECT_EQ(Nanos(U(std::numeric_limits<uint64_t>::max())), kMax);
  // Sub-nanosecond periods round up.
  using Atto = std::chrono::duration<int64_t, std::atto>;
  EXPECT_EQ(Nanos(Atto(1)), 1);
  EXPECT_EQ(Nanos(Atto(-1)), 0);
  EXPECT_EQ(Nanos(Atto(kMax)), 9'223'372'037);
}

TEST(DurationNanosTest, FloatingChronoCountsRoundUpSaturateAndRefuseNan) {
  using Seconds = std::chrono::duration<double>;
  using NanosD = std::chrono::duration<double, std::nano>;
  EXPECT_EQ(Nanos(NanosD(0.5)), 1);
  EXPECT_EQ(Nanos(NanosD(1.0)), 1);
  EXPECT_EQ(Nanos(NanosD(-0.5)), 0);
  EXPECT_EQ(Nanos(Seconds(1.5)), 1'500'000'000);
  EXPECT_EQ(Nanos(Seconds(1e300)), kMax);
  EXPECT_EQ(Nanos(Seconds(-1e300)), kMin);
  EXPECT_EQ(Nanos(Seconds(1e10)), kMax);  // past 2^63 ns
  EXPECT_EQ(Nanos(std::chrono::duration<float, std::milli>(2.5f)), 2'500'000);
  EXPECT_EQ(Nanos(std::chrono::duration<long double, std::ratio<1, 60>>(1.0L)),
            16'666'667);
  EXPECT_EQ(Nanos(Seconds(std::numeric_limits<double>::denorm_min())), 1);
  EXPECT_EQ(FromChrono(Seconds(std::numeric_limits<double>::infinity())),
            absl::InfiniteDuration());
  EXPECT_EQ(FromChrono(Seconds(-std::numeric_limits<double>::infinity())),
            -absl::InfiniteDuration());
  EXPECT_FALSE(FromChrono(Seconds(std::nan(""))).has_value());
  EXPECT_FALSE(FromChrono(std::chrono::duration<float>(NAN)).has_value());
}

// The tick arithmetic's helpers (tick ends, sleep limits): exact inside the
// range, pinned to its end outside it, for every reading and tick size.
TEST(DurationNanosTest, SaturatingArithmeticPinsAtTheRangeEnds) {
  EXPECT_EQ(SaturatingMul(0, 1), 0);
  EXPECT_EQ(SaturatingMul(7, 1'000'000), 7'000'000);
  EXPECT_EQ(SaturatingMul(kMax, 1), kMax);
  EXPECT_EQ(SaturatingMul(kMax / 2, 2), kMax - 1);
  EXPECT_EQ(SaturatingMul(kMax / 2 + 1, 2), kMax);
  EXPECT_EQ(SaturatingMul(kMax, kMax), kMax);
  EXPECT_EQ(SaturatingMul(int64_t{1} << 32, int64_t{1} << 31), kMax);
  EXPECT_EQ(SaturatingMul((int64_t{1} << 31) - 1, int64_t{1} << 32),
            ((int64_t{1} << 31) - 1) << 32);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t a = static_cast<int64_t>(rng() >> (1 + rng() % 63));
    const int64_t b =
        std::max<int64_t>(1, static_cast<int64_t>(rng() >> (1 + rng() % 63)));
    const __int128 exact = static_cast<__int128>(a) * b;
    EXPECT_EQ(SaturatingMul(a, b),
              exact > kMax ? kMax : static_cast<int64_t>(exact))
        << a << " * " << b;
  }
  EXPECT_EQ(SaturatingAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(SaturatingAdd(kMax, 1), kMax);
  EXPECT_EQ(SaturatingAdd(kMin, kMax), -1);
  EXPECT_EQ(SaturatingSub(kMin, 1), kMin);
  EXPECT_EQ(SaturatingSub(kMax, -1), kMax);
  EXPECT_EQ(SaturatingSub(5, 7), -2);
}

}  // namespace
}  // namespace tickwheel::internal
