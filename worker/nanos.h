// worker/nanos.h
// -----------------------------------------------------------------------------
// Internal. Nanosecond arithmetic shared by the engine, the clocks and the
// idle tracker: a delay from an absl::Duration, and additions and
// multiplications that saturate at INT64_MAX instead of wrapping into the
// past.
//
// DelayNanos(d): max(0, absl::ToInt64Nanoseconds(d)), inline for the delays
// timers see.
//
// Why: the Abseil that Debian ships has ToInt64Nanoseconds out of line, in a
// shared library: a call through the PLT on every newTimeout(). Delays from
// 0 to 2^33 s (272 years) take the path that later
// Abseil releases inline themselves: whole seconds * 1e9 plus the quarter
// nanoseconds / 4, read from Duration's representation through
// absl::time_internal, the accessors Abseil's own inline code uses. Negative,
// huge and infinite delays go the library's way. tests/nanos_test.cc
// checks both paths against the library.
//
// Thread-safety: pure functions.

#ifndef TICKWHEEL_WORKER_NANOS_H_
#define TICKWHEEL_WORKER_NANOS_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/time/time.h"

namespace tickwheel::internal {

inline int64_t DelayNanos(absl::Duration d) {
  const int64_t seconds = absl::time_internal::GetRepHi(d);
  if (seconds >= 0 && seconds >> 33 == 0) {  // also excludes +infinity
    return seconds * 1000 * 1000 * 1000 + absl::time_internal::GetRepLo(d) / 4;
  }
  return std::max<int64_t>(0, absl::ToInt64Nanoseconds(d));
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

// a * b, saturating at INT64_MAX. `a` >= 0, `b` > 0.
constexpr int64_t SaturatingMul(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max()
             : a * b;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_NANOS_H_
