// timer/prometheus.h
// -----------------------------------------------------------------------------
// Metrics in the Prometheus text exposition format, version 0.0.4: what a
// /metrics endpoint serves (Content-Type "text/plain; version=0.0.4").
//
// A PrometheusExposition collects the metrics snapshots of any number of
// timers -- TimerMetrics of a Timer or a LocalTimer, IdleTrackerMetrics of
// an IdleTracker, DurableMetrics of a DurableTimer (durable/prometheus.h),
// and metrics of your own -- each under a label set you choose, and writes
// them grouped by metric family, so that every family's "# HELP" and
// "# TYPE" lines appear once, above all of its samples, as the format
// requires. PrometheusText() is the one-snapshot shortcut.
//
// Example (a scrape of two timers and the idle tracker):
//
//   auto scrape = tickwheel::PrometheusExposition::Create().value();
//   absl::Status s = AddMetrics(scrape, timer->metrics(), {{"timer", "main"}});
//   s.Update(AddMetrics(scrape, loop->metrics(), {{"timer", "loop"}}));
//   s.Update(AddMetrics(scrape, idle->metrics(), {{"tracker", "conns"}}));
//   if (!s.ok()) return s;  // a bad label, or a label set given twice
//   std::string body = scrape.ToString();
//
// gives, with the default prefix "tickwheel":
//
//   # HELP tickwheel_timer_pending_timeouts Timeouts scheduled and neither ...
//   # TYPE tickwheel_timer_pending_timeouts gauge
//   tickwheel_timer_pending_timeouts{timer="main"} 3
//   tickwheel_timer_pending_timeouts{timer="loop"} 0
//   # HELP tickwheel_timer_expired_total Task runs started ...
//   # TYPE tickwheel_timer_expired_total counter
//   ...
//   # TYPE tickwheel_timer_lateness_seconds histogram
//   tickwheel_timer_lateness_seconds_bucket{timer="main",le="0.000106495"} 4
//   ...
//   tickwheel_timer_lateness_seconds_bucket{timer="main",le="+Inf"} 17
//   tickwheel_timer_lateness_seconds_sum{timer="main"} 0.731
//   tickwheel_timer_lateness_seconds_count{timer="main"} 17
//
// The families, after the prefix ("<prefix>_", or nothing for an empty one):
//   TimerMetrics        timer_pending_timeouts (gauge), timer_expired_total,
//                       timer_cancelled_total, timer_ticks_total,
//                       timer_catch_up_ticks_total, timer_wakeups_total
//                       (counters), timer_worst_lateness_seconds (gauge),
//                       timer_lateness_seconds (histogram)
//   IdleTrackerMetrics  idle_tracked, idle_active (gauges), idle_fired_total,
//                       idle_rearmed_total, idle_stale_dropped_total,
//                       idle_timer_ops_total, idle_refreshes_total
//                       (counters), idle_worst_lateness_seconds,
//                       idle_worst_clock_lag_seconds (gauges); the wheel
//                       under a tracker is IdleTracker::timerMetrics(), a
//                       TimerMetrics
//   DurableMetrics      durable/prometheus.h lists them
// Durations are in seconds, the format's base unit. Counters count since the
// timer was created (Connect() for a DurableTimer), so they never go down
// while it lives; a restart starts them over, which Prometheus's rate()
// handles.
//
// The lateness histogram. LatenessHistogram has fine fixed buckets (12.5%
// wide, a few hundred of them); a scrape shows the cumulative count at each
// bound of PrometheusOptions::lateness_buckets. Each bound is first raised to
// the top of the fine bucket that holds it (at most 12.5% higher), so every
// count is exact: the le label shows the raised bound (a requested 1 ms is
// le="0.001048575"), the same in every scrape. Ask for the fine buckets' own
// tops (LatenessHistogram::BucketUpperBound()) to see labels unchanged.
//
// Errors: InvalidArgument for a bad prefix, metric name, label name, label
// value that is not UTF-8, bucket bounds that do not increase, or a value a
// counter cannot hold; AlreadyExists for a series (family and label set)
// added twice. A call that fails adds nothing.
//
// Your own metrics join the same scrape through PrometheusExposition::Add(),
// which is also how durable/prometheus.h adds DurableMetrics.
//
// Thread-safety: PrometheusExposition is thread-compatible (one thread at a
// time, or your lock); the free functions are thread-safe. Take the
// snapshots (metrics()) on any thread, as their own headers allow.
//
// Cost: a few small string appends per sample; a histogram also walks the
// fine buckets once. Nothing here touches a timer: the snapshot was taken by
// metrics(), which copies the 4 KiB histogram.

#ifndef TICKWHEEL_TIMER_PROMETHEUS_H_
#define TICKWHEEL_TIMER_PROMETHEUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/idle_tracker_metrics.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel {

// The labels of one series, written in this order: {{"timer", "main"}}.
// A name matches [a-zA-Z_][a-zA-Z0-9_]*, does not start with "__" (reserved
// by Prometheus) and is not "le" (the histogram's); names do not repeat. A
// value is any UTF-8 text; backslash, double quote and line feed are escaped
// in the output.
using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

// The bounds a lateness histogram is shown at, by default: 100 us, 250 us,
// 500 us, 1 ms, ... 5 s, 10 s (each raised to a fine bucket's top).
std::vector<absl::Duration> DefaultLatenessBuckets();

struct PrometheusOptions {
  // Starts every metric name, followed by "_": "tickwheel_timer_...". Empty:
  // no prefix. Matches [a-zA-Z_:][a-zA-Z0-9_:]*.
  std::string prefix = "tickwheel";
  // Where a lateness histogram has its le buckets, increasing, each finite
  // and >= 0 (zero: the runs exactly on time); the "+Inf" bucket always
  // follows. Bounds that rise to the same fine bucket's top are written once.
  std::vector<absl::Duration> lateness_buckets = DefaultLatenessBuckets();
};

// One metric of a series, for PrometheusExposition::Add(): a counter, a
// gauge, or a lateness histogram in seconds. `name` is the full metric name
// (PrometheusExposition::MetricName() puts the prefix in front): a counter's
// by convention ends in "_total", a histogram's in "_seconds"; it matches
// [a-zA-Z_:][a-zA-Z0-9_:]*. `help` is any text (backslash and line feed are
// escaped; a family without help gets no HELP line). A counter's value is
// finite and >= 0; a gauge's anything, NaN and infinities too. A histogram
// reads `*histogram` during Add() only, so the pointer need not outlive that
// call.
struct PrometheusMetric {
  enum class Type { kCounter, kGauge, kHistogram };
  Type type = Type::kGauge;
  std::string name;
  std::string help;
  double value = 0;                              // counter, gauge
  const LatenessHistogram* histogram = nullptr;  // histogram
};

// The metrics of a scrape, grouped by family. A value type (movable and
// copyable); it holds the text of its samples, not the snapshots.
// This class is thread-compatible.
class PrometheusExposition {
 public:
  // An empty exposition. InvalidArgument: a bad prefix or bucket bounds.
  // Cost: checks the options; allocates a little.
  static absl::StatusOr<PrometheusExposition> Create(
      PrometheusOptions options = {});

  // `name` with the prefix in front: "tickwheel_" + name, or `name` itself
  // when the prefix is empty. What AddMetrics() names its families with;
  // use it for your own to keep them together.
  std::string MetricName(std::string_view name) const;

  // Adds one series: each of `metrics` with `labels`. A metric joins the
  // family of its name, or starts one; the first sample of a family fixes
  // its type and help, and later ones must agree. All or nothing: every
  // metric is checked before any is added.
  // InvalidArgument: a bad name, label or value; a family of another type or
  //   help; a name that one of a histogram's series has (x_bucket, x_sum,
  //   x_count beside a histogram x) or the same name twice in `metrics`.
  // AlreadyExists: a family has a series with these labels already.
  // Cost: per metric, a few string appends and a hash look-up; a histogram
  // also walks the fine buckets once and appends a line per bound.
  absl::Status Add(const PrometheusLabels& labels,
                   const std::vector<PrometheusMetric>& metrics);

  // Appends the exposition to `*out`: each family's HELP and TYPE lines and
  // then its samples, families in the order they were first added, samples
  // in the order added. Text of your own (other families) may come before or
  // after it in the same response. Cost: a copy of the text.
  void AppendTo(std::string* out) const;
  // The exposition as a string.
  std::string ToString() const;

  // The options, with the bucket bounds as given.
  const PrometheusOptions& options() const { return options_; }

 private:
  struct Family {
    std::string name;
    std::string help;
    PrometheusMetric::Type type;
    std::string samples;                     // their lines, in order
    std::unordered_set<std::string> series;  // the label sets, rendered
  };

  PrometheusExposition(PrometheusOptions options,
                       std::vector<int64_t> bounds_nanos);
  // Why `metric` cannot join the exposition with the label set `rendered`;
  // OK when it can.
  absl::Status Check(const PrometheusMetric& metric,
                     const std::string& rendered) const;
  // Appends the sample lines of `metric` to `out`.
  void WriteSamples(const PrometheusMetric& metric, const std::string& rendered,
                    std::string* out) const;

  PrometheusOptions options_;
  // The histogram bounds, raised to fine bucket tops, in nanoseconds.
  std::vector<int64_t> bounds_nanos_;
  std::vector<Family> families_;
  std::unordered_map<std::string, size_t> index_;  // name -> families_
};

// Adds every metric of a Timer's or LocalTimer's snapshot (timer->metrics())
// under `labels`, or of an IdleTracker's (tracker->metrics()); the families
// are listed above. The families of several timers share their HELP and
// TYPE lines, so give each timer a label set of its own. Errors and cost as
// PrometheusExposition's calls; on error nothing is added.
absl::Status AddMetrics(PrometheusExposition& exposition,
                        const TimerMetrics& metrics,
                        const PrometheusLabels& labels);
absl::Status AddMetrics(PrometheusExposition& exposition,
                        const IdleTrackerMetrics& metrics,
                        const PrometheusLabels& labels);

// One snapshot as a whole exposition: Create(options), AddMetrics(), and
// ToString(). Errors as those.
absl::StatusOr<std::string> PrometheusText(
    const TimerMetrics& metrics, const PrometheusLabels& labels = {},
    const PrometheusOptions& options = {});
absl::StatusOr<std::string> PrometheusText(
    const IdleTrackerMetrics& metrics, const PrometheusLabels& labels = {},
    const PrometheusOptions& options = {});

namespace internal {

// What every PrometheusText() overload does, for any snapshot type that has
// an AddMetrics() overload (found through PrometheusExposition's namespace).
template <typename Metrics>
absl::StatusOr<std::string> PrometheusTextOf(const Metrics& metrics,
                                             const PrometheusLabels& labels,
                                             const PrometheusOptions& options) {
  absl::StatusOr<PrometheusExposition> exposition =
      PrometheusExposition::Create(options);
  if (!exposition.ok()) return exposition.status();
  if (absl::Status s = AddMetrics(*exposition, metrics, labels); !s.ok()) {
    return s;
  }
  return exposition->ToString();
}

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_PROMETHEUS_H_
