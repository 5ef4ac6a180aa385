// timer/metrics.h
// -----------------------------------------------------------------------------
// TimerMetrics: a snapshot of one Timer's counters, for dashboards and tests,
// with the distribution of how late its tasks ran (LatenessHistogram). Both
// format with fmt ("{}") and convert with ToString().
//
// Each counter is read with a relaxed load, so a snapshot taken while the
// worker runs is a set of values that may be a few events apart from each
// other. `expired` and the lateness histogram are published in groups while
// the worker expires timeouts: at most 64 runs behind it, and complete when
// its pass ends (so a task that reads its own timer's metrics may not find
// its own run counted yet). A snapshot taken after stop(), or on a
// LocalTimer's thread between its advance() calls, is exact.

#ifndef TICKWHEEL_TIMER_METRICS_H_
#define TICKWHEEL_TIMER_METRICS_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <array>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/base/histogram.h"

namespace tickwheel {

namespace internal {
// Fills a snapshot from an engine's counters (timer/engine_bridge.cc).
struct HistogramAccess;
}  // namespace internal

// How late tasks started: (the time a run started - its deadline), over
// every run of every task of a timer (each run of a periodic timeout counts
// once), measured when the worker claims the task. Never negative: no task
// runs early. Buckets are log-linear, so a percentile is exact to within
// 12.5% of its value (it reports the top of the bucket that holds it, at most
// max()); count(), sum() and max() are exact. A value type: a snapshot, 4 KiB.
//
// The buckets are fixed and the same for every histogram: kBuckets of them,
// bucket i holding the lateness in (BucketUpperBound(i - 1),
// BucketUpperBound(i)], bucket 0 exactly zero, the last one up to the
// largest lateness (the int64 nanosecond range). So histograms add up bucket
// by bucket, and an exporter (timer/prometheus.h) reads them without loss.
//
// A Timer fills its own; Record() lets a client of the timer (the durable
// timers of durable/, a user's own scheduler) keep the same distribution.
// This class is thread-compatible: Record() on one object needs the caller's
// own lock if other threads read or record at the same time.
class LatenessHistogram {
 public:
  // How many buckets every histogram has.
  static constexpr int kBuckets = internal::kHistogramDistinctBuckets;

  // Adds one run that started `lateness` after its deadline (negative counts
  // as zero, huge values saturate at the int64 nanosecond range). Cost: a few
  // arithmetic operations; never allocates.
  void Record(absl::Duration lateness);

  // Runs recorded.
  int64_t count() const { return count_; }
  // The lateness below which a fraction `q` of the runs started, q in
  // [0, 1] (0.5: the median, 0.99: p99); zero when empty. q outside [0, 1]
  // is clamped. Cost: a pass over the buckets.
  absl::Duration Percentile(double q) const;
  // The largest lateness recorded; zero when empty.
  absl::Duration max() const { return absl::Nanoseconds(max_); }
  // The lateness of every run added up, in whole nanoseconds; it saturates
  // at the int64 nanosecond range (about 292 years) and then stays there.
  // sum() / count() is the mean lateness. In a Timer's snapshot taken while
  // its worker runs, sum() and the counts are each exact but may be a few
  // runs apart (TimerMetrics says why).
  absl::Duration sum() const { return absl::Nanoseconds(sum_); }

  // The largest lateness bucket `i` holds, for i in [0, kBuckets):
  // strictly increasing in i, zero for bucket 0, whole nanoseconds, and
  // absl::Nanoseconds(INT64_MAX) for the last. An i outside the range is
  // clamped into it. Cost: a table look-up and a few shifts.
  static absl::Duration BucketUpperBound(int i);
  // The bucket that holds `lateness` (negative counts as zero, huge values
  // saturate as Record() does): the smallest i with lateness <=
  // BucketUpperBound(i) once truncated to whole nanoseconds. Cost: a few
  // bit operations and a binary search of at most log2(kBuckets) steps.
  static int BucketIndex(absl::Duration lateness);
  // Runs recorded in bucket `i`; 0 for an i outside [0, kBuckets).
  int64_t BucketCount(int i) const;

  // "n=1000 p50=312us p90=780us p99=990us max=1.01ms".
  std::string ToString() const;

 private:
  friend struct internal::HistogramAccess;  // takes the snapshot
  std::array<int64_t, internal::kHistogramBuckets> counts_{};
  int64_t count_ = 0;
  int64_t max_ = 0;
  int64_t sum_ = 0;
};

struct TimerMetrics {
  int64_t pending = 0;  // scheduled, neither expired, cancelled nor stopped
  int64_t expired = 0;  // tasks the worker has claimed to run
  // Timeouts cancelled: successful cancel() calls, each counted when it
  // returns, plus the timeouts cancelAll() cancelled.
  int64_t cancelled = 0;
  int64_t ticks = 0;  // ticks processed
  // Ticks processed late by a full tick or more (the worker fell behind: a
  // slow task, a suspended process) and caught up.
  int64_t catch_up_ticks = 0;
  int64_t wakeups = 0;  // times the worker returned from sleep
  // Largest (run time - deadline) of any expired task, measured when the
  // worker claims it; zero before the first expiry. lateness.max().
  absl::Duration worst_lateness = absl::ZeroDuration();
  // The distribution of (run time - deadline) over every run.
  LatenessHistogram lateness;

  std::string ToString() const;
};

}  // namespace tickwheel

template <>
struct fmt::formatter<tickwheel::LatenessHistogram>
    : fmt::formatter<std::string> {
  template <typename FormatContext>
  auto format(const tickwheel::LatenessHistogram& h, FormatContext& ctx) const {
    return fmt::formatter<std::string>::format(h.ToString(), ctx);
  }
};

template <>
struct fmt::formatter<tickwheel::TimerMetrics> : fmt::formatter<std::string> {
  template <typename FormatContext>
  auto format(const tickwheel::TimerMetrics& m, FormatContext& ctx) const {
    return fmt::formatter<std::string>::format(m.ToString(), ctx);
  }
};

#endif  // TICKWHEEL_TIMER_METRICS_H_
