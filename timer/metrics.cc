#include "tickwheel/timer/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tickwheel {

absl::Duration LatenessHistogram::Percentile(double q) const {
  if (count_ == 0) return absl::ZeroDuration();
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the run at fraction q, 1-based: at least the first.
  const auto rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(q * static_cast<double>(count_))));
  int64_t seen = 0;
  for (int b = 0; b < internal::kHistogramBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) {
      // The top of bucket b: one below the next bucket's bottom, or b's own
      // bottom where small values give a bucket one value.
      int64_t top = internal::HistogramBucketLow(b);
      for (int n = b + 1; n < internal::kHistogramBuckets; ++n) {
        const int64_t low = internal::HistogramBucketLow(n);
        if (low > top) {
          top = low - 1;
          break;
        }
      }
      return absl::Nanoseconds(std::min(top, max_));
    }
  }
  return absl::Nanoseconds(max_);
}

void LatenessHistogram::Record(absl::Duration lateness) {
  const int64_t ns = lateness <= absl::ZeroDuration()
                         ? 0
                         : (lateness >= absl::Nanoseconds(INT64_MAX)
                                ? INT64_MAX
                                : absl::ToInt64Nanoseconds(lateness));
  ++counts_[internal::HistogramBucket(ns)];
  ++count_;
  max_ = std::max(max_, ns);
}

std::string LatenessHistogram::ToString() const {
  return fmt::format("n={} p50={} p90={} p99={} max={}", count_,
                     absl::FormatDuration(Percentile(0.5)),
                     absl::FormatDuration(Percentile(0.9)),
                     absl::FormatDuration(Percentile(0.99)),
                     absl::FormatDuration(max()));
}

std::string TimerMetrics::ToString() const {
  return fmt::format(
      "pending={} expired={} cancelled={} ticks={} catch_up_ticks={} "
      "wakeups={} worst_lateness={} lateness=[{}]",
      pending, expired, cancelled, ticks, catch_up_ticks, wakeups,
      absl::FormatDuration(worst_lateness), lateness.ToString());
}

}  // namespace tickwheel
