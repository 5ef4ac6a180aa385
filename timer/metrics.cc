#include "tickwheel/timer/metrics.h"

namespace tickwheel {

std::string TimerMetrics::ToString() const {
  return fmt::format(
      "pending={} expired={} cancelled={} ticks={} catch_up_ticks={} "
      "wakeups={} worst_lateness={}",
      pending, expired, cancelled, ticks, catch_up_ticks, wakeups,
      absl::FormatDuration(worst_lateness));
}

}  // namespace tickwheel
