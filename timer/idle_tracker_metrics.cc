#include "tickwheel/timer/idle_tracker_metrics.h"

namespace tickwheel {

std::string IdleTrackerMetrics::ToString() const {
  return fmt::format(
      "tracked={} fired={} rearmed={} stale_dropped={} timer_ops={} "
      "refreshes={} active={} worst_lateness={} worst_clock_lag={}",
      tracked, fired, rearmed, stale_dropped, timer_ops, refreshes, active,
      absl::FormatDuration(worst_lateness),
      absl::FormatDuration(worst_clock_lag));
}

}  // namespace tickwheel
