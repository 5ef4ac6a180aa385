// base/nanos.h
// -----------------------------------------------------------------------------
// Internal. Nanosecond arithmetic shared by the engine, the clocks and the
// idle tracker: a delay from an absl::Duration or from any std::chrono
// duration, and additions and multiplications that saturate at the int64
// range instead of wrapping into the past.
//
// Every delay, period and timeout the API accepts becomes whole nanoseconds
// here, rounded up (a delay never shrinks, so a task never runs before the
// exact time asked for) and saturated at the int64 nanosecond range (about
// 292 years): there is one conversion for each kind of input.
//
// DelayNanos(d), for an absl::Duration: d in nanoseconds, rounded up, at
// least 0; inline for the delays timers see. Why inline: the Abseil that
// Debian ships has ToInt64Nanoseconds out of line, in a shared library: a
// call through the PLT on every newTimeout(). Delays from 0 to 2^33 s (272
// years) are read from Duration's representation (whole seconds and quarter
// nanoseconds) through absl::time_internal, the accessors Abseil's own
// inline code uses. Negative, huge and infinite delays go the library's
// way.
//
// FromChrono(d), for any std::chrono::duration: the same rounding and
// saturation, in exact integer arithmetic for integer counts (any period,
// 1/60 s or 7/3 ns alike) and in long double for floating-point counts,
// where +-infinity maps to absl's +-InfiniteDuration() and NaN to nullopt
// (refused by the caller). tests/duration_nanos_test.cc checks both against
// exact rational arithmetic and the library.
//
// Thread-safety: pure functions.

#ifndef TICKWHEEL_BASE_NANOS_H_
#define TICKWHEEL_BASE_NANOS_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#include "absl/time/time.h"

namespace tickwheel::internal {

inline int64_t DelayNanos(absl::Duration d) {
  const int64_t seconds = absl::time_internal::GetRepHi(d);
  if (seconds >= 0 && seconds >> 33 == 0) {  // also excludes +infinity
    return seconds * 1000 * 1000 * 1000 +
           (absl::time_internal::GetRepLo(d) + 3) / 4;
  }
  if (seconds < 0) return 0;  // negative, or -infinity
  // Saturates at INT64_MAX.
  return absl::ToInt64Nanoseconds(absl::Ceil(d, absl::Nanoseconds(1)));
}

template <typename D>
inline constexpr bool kIsChronoDuration = false;
template <typename Rep, typename Period>
inline constexpr bool kIsChronoDuration<std::chrono::duration<Rep, Period>> =
    true;

// Any std::chrono::duration as an absl::Duration of whole nanoseconds (see
// the file comment); nullopt for a NaN count.
template <typename Rep, typename Period>
std::optional<absl::Duration> FromChrono(std::chrono::duration<Rep, Period> d) {
  static_assert(std::is_arithmetic_v<Rep>,
                "tickwheel: a std::chrono::duration with an integer or "
                "floating-point count");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // Nanoseconds per tick of the duration: Period * 10^9 = num * kMul / kDen,
  // reduced. Built by hand rather than with std::ratio_divide, which fails
  // to compile where the product leaves intmax_t (std::exa).
  constexpr intmax_t kGcd = std::gcd(intmax_t{1'000'000'000}, Period::den);
  constexpr intmax_t kMul = 1'000'000'000 / kGcd;
  constexpr intmax_t kDen = Period::den / kGcd;
  if constexpr (std::is_floating_point_v<Rep>) {
    const long double count = d.count();
    if (std::isnan(count)) return std::nullopt;
    if (std::isinf(count)) {
      return count > 0 ? absl::InfiniteDuration() : -absl::InfiniteDuration();
    }
    const long double ns =
        std::ceil(count * static_cast<long double>(Period::num) * kMul / kDen);
    if (ns >= 0x1p63L) return absl::Nanoseconds(kMax);
    if (ns < -0x1p63L) return absl::Nanoseconds(kMin);
    return absl::Nanoseconds(static_cast<int64_t>(ns));
  } else {
    static_assert(sizeof(Rep) <= sizeof(int64_t),
                  "tickwheel: a std::chrono::duration count of at most 64 "
                  "bits");
    // |count * num| < 2^127; the factor kMul may overflow: then saturate.
    __int128 ns = static_cast<__int128>(d.count()) * Period::num;
    if (__builtin_mul_overflow(ns, static_cast<__int128>(kMul), &ns)) {
      return absl::Nanoseconds(d.count() > 0 ? kMax : kMin);
    }
    __int128 q = ns / kDen;  // toward zero, then up
    if (ns % kDen > 0) ++q;
    if (q > kMax) return absl::Nanoseconds(kMax);
    if (q < kMin) return absl::Nanoseconds(kMin);
    return absl::Nanoseconds(static_cast<int64_t>(q));
  }
}

// a + b, saturating at INT64_MAX. `a` may be negative (clock readings have
// any origin); `b` must not be.
constexpr int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b
             ? std::numeric_limits<int64_t>::max()
             : a + b;
}

// a - b, saturating at the int64 range.
constexpr int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t d;
  if (!__builtin_sub_overflow(a, b, &d)) return d;
  return b < 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

// a * b, saturating at INT64_MAX. `a` >= 0, `b` > 0. A multiply and an
// overflow test, no division: the expiry path computes a tick's end once per
// expired node, where a 64-bit divide would be a large share of its cost.
constexpr int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t p;
  if (__builtin_mul_overflow(a, b, &p))
    return std::numeric_limits<int64_t>::max();
  return p;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_NANOS_H_
