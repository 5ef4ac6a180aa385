// worker/duration_nanos.h
// -----------------------------------------------------------------------------
// Internal. A newTimeout() delay in nanoseconds: max(0,
// absl::ToInt64Nanoseconds(d)), inline for the delays timers see.
//
// Why: the Debian Abseil (20220623) has ToInt64Nanoseconds out of line, in a
// shared library: a PLT call and ~20 instructions on every newTimeout(),
// 3-5% of it. Delays from 0 to 2^33 s (272 years) take the path that later
// Abseil releases inline themselves: whole seconds * 1e9 plus the quarter
// nanoseconds / 4, read from Duration's representation through
// absl::time_internal, the accessors Abseil's own inline code uses. Negative,
// huge and infinite delays go the library's way. tests/duration_nanos_test.cc
// checks both paths against the library.
//
// Thread-safety: a pure function.

#ifndef TICKWHEEL_WORKER_DURATION_NANOS_H_
#define TICKWHEEL_WORKER_DURATION_NANOS_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace tickwheel::internal {

inline int64_t DelayNanos(absl::Duration d) {
  const int64_t seconds = absl::time_internal::GetRepHi(d);
  if (seconds >= 0 && seconds >> 33 == 0) {  // also excludes +infinity
    return seconds * 1000 * 1000 * 1000 +
           absl::time_internal::GetRepLo(d) / 4;
  }
  return std::max<int64_t>(0, absl::ToInt64Nanoseconds(d));
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_DURATION_NANOS_H_
