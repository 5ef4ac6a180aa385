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

namespace {

// `d` in whole nanoseconds, rounded toward zero: negative as zero, beyond
// the int64 range as INT64_MAX.
int64_t ClampedNanos(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  if (d >= absl::Nanoseconds(INT64_MAX)) return INT64_MAX;
  return absl::ToInt64Nanoseconds(d);
}

}  // namespace

void LatenessHistogram::Record(absl::Duration lateness) {
  const int64_t ns = ClampedNanos(lateness);
  ++counts_[internal::HistogramBucket(ns)];
  ++count_;
  max_ = std::max(max_, ns);
  sum_ = internal::HistogramSaturatingAdd(sum_, ns);
}

absl::Duration LatenessHistogram::BucketUpperBound(int i) {
  i = std::clamp(i, 0, kBuckets - 1);
  if (i == kBuckets - 1) return absl::Nanoseconds(INT64_MAX);
  // One below where the next distinct bucket starts.
  return absl::Nanoseconds(
      internal::HistogramBucketLow(internal::kHistogramDistinct[i + 1]) - 1);
}

int LatenessHistogram::BucketIndex(absl::Duration lateness) {
  const int b = internal::HistogramBucket(ClampedNanos(lateness));
  const auto& table = internal::kHistogramDistinct;
  // b is reachable (base/histogram.h asserts it), so it is in the table.
  return static_cast<int>(std::lower_bound(table.begin(), table.end(), b) -
                          table.begin());
}

int64_t LatenessHistogram::BucketCount(int i) const {
  if (i < 0 || i >= kBuckets) return 0;
  return counts_[internal::kHistogramDistinct[i]];
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
