// timer/metrics.h
// -----------------------------------------------------------------------------
// TimerMetrics: a snapshot of one Timer's counters, for dashboards and tests.
// Formats with fmt ("{}") and converts with ToString().
//
// Each counter is read with a relaxed load, so a snapshot taken while the
// worker runs is a set of individually exact values that may be a few events
// apart from each other; a snapshot taken after stop() is exact.

#ifndef TICKWHEEL_TIMER_METRICS_H_
#define TICKWHEEL_TIMER_METRICS_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "absl/time/time.h"

namespace tickwheel {

struct TimerMetrics {
  int64_t pending = 0;    // scheduled, neither expired, cancelled nor stopped
  int64_t expired = 0;    // tasks the worker has claimed to run
  // Successful cancel() calls, each counted when it returns.
  int64_t cancelled = 0;
  int64_t ticks = 0;      // ticks processed
  // Ticks processed late by a full tick or more (the worker fell behind: a
  // slow task, a suspended process) and caught up.
  int64_t catch_up_ticks = 0;
  int64_t wakeups = 0;    // times the worker returned from sleep
  // Largest (run time - deadline) of any expired task, measured when the
  // worker claims it; zero before the first expiry.
  absl::Duration worst_lateness = absl::ZeroDuration();

  std::string ToString() const;
};

}  // namespace tickwheel

template <>
struct fmt::formatter<tickwheel::TimerMetrics> : fmt::formatter<std::string> {
  template <typename FormatContext>
  auto format(const tickwheel::TimerMetrics& m, FormatContext& ctx) const {
    return fmt::formatter<std::string>::format(m.ToString(), ctx);
  }
};

#endif  // TICKWHEEL_TIMER_METRICS_H_
