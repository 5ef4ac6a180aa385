// tools/bench/results.h
// -----------------------------------------------------------------------------
// The benchmark's results: which metrics exist (one table row each, in table
// order), the samples each implementation produced for them (one per
// repetition), the failed correctness checks, and the summaries (median,
// min, max) that the table, the JSON file and the target check read.
//
// Metric keys are "<workload>.<name>", e.g. "W1.ns_per_op.P2"; the workloads
// build them with the helpers below so that a typo cannot create a row.
//
// A few rows are ratios of two other rows (DerivedRatios(), e.g. W7's cost
// at the deepest D over its cost at the shallowest): no workload reports
// them; Record() computes one sample per repetition, from the two values the
// same implementation reported in that repetition, once both are in.
//
// This class is thread-compatible.

#ifndef TICKWHEEL_TOOLS_BENCH_RESULTS_H_
#define TICKWHEEL_TOOLS_BENCH_RESULTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/bench_timer.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

enum class Better { kLower, kHigher, kNeither };

struct MetricDef {
  std::string key;
  std::string workload;  // "W1"
  std::string label;     // table text, e.g. "W1 schedule, P=2"
  std::string unit;      // "ns/op"
  Better better;
  int decimals;          // digits after the point in the table
};

// Median, min and max of the repetitions.
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  int count = 0;
};
Summary Summarize(std::vector<double> samples);

// The p-quantile (0 <= p <= 1) of `sorted` by the nearest-rank method.
double Quantile(const std::vector<double>& sorted, double p);

// Metric key builders.
std::string KeyW1NsPerOp(int producers);
std::string KeyW1CpuNsPerOp(int producers);
std::string KeyW1Unprocessed(int producers);
std::string KeyW1Throughput(int producers);  // all producers together, M/s
std::string KeyW1OthersCpuNsPerOp(int producers);  // the timer's own threads
std::string KeyW1Scaling(int producers);     // derived: throughput P / P=1
std::string KeyW2NsPerPair(int producers);
std::string KeyW2CpuNsPerPair(int producers);
std::string KeyW2Pending(int producers);
std::string KeyW2RssHeld(int producers);
std::string KeyW2RssPeak(int producers);
inline constexpr const char* kKeyW3P50 = "W3.lateness_p50";
inline constexpr const char* kKeyW3P99 = "W3.lateness_p99";
inline constexpr const char* kKeyW3Max = "W3.lateness_max";
inline constexpr const char* kKeyW3Early = "W3.early_fires";
inline constexpr const char* kKeyW4Bytes = "W4.bytes_per_pending";
inline constexpr const char* kKeyW5Cpu = "W5.cpu_seconds";
inline constexpr const char* kKeyW5Wakeups = "W5.wakeups_per_second";
inline constexpr const char* kKeyW6Rate = "W6.expiries_per_second";
inline constexpr const char* kKeyW6CpuRate = "W6.expiries_per_worker_cpu_second";
inline constexpr const char* kKeyW6LastDelay = "W6.last_deadline_to_last_run";
std::string KeyW7NsPerOp(int depth);
std::string KeyW7CpuNsPerOp(int depth);
std::string KeyW7Unprocessed(int depth);
// Derived: the deepest D's value over the shallowest D's (wall, caller CPU).
inline constexpr const char* kKeyW7Ratio = "W7.ns_per_op.deep_over_shallow";
inline constexpr const char* kKeyW7CpuRatio = "W7.cpu_ns_per_op.deep_over_shallow";
inline constexpr const char* kKeyW8DeadlineLast = "W8.same_deadline.last_run_late_ms";
inline constexpr const char* kKeyW8DeadlineP99 = "W8.same_deadline.lateness_p99_ms";
inline constexpr const char* kKeyW8DeadlineEarly = "W8.same_deadline.early_fires";
inline constexpr const char* kKeyW8DeadlineSchedule = "W8.same_deadline.schedule_ms";
inline constexpr const char* kKeyW8CountedLast = "W8.same_deadline_counted.last_run_late_ms";
inline constexpr const char* kKeyW8CountedP99 = "W8.same_deadline_counted.lateness_p99_ms";
inline constexpr const char* kKeyW8CountedSchedule = "W8.same_deadline_counted.schedule_ms";
inline constexpr const char* kKeyW8DelayMax = "W8.same_delay.lateness_max_ms";
inline constexpr const char* kKeyW8DelayP99 = "W8.same_delay.lateness_p99_ms";
inline constexpr const char* kKeyW8DelayEarly = "W8.same_delay.early_fires";
inline constexpr const char* kKeyW8DelaySchedule = "W8.same_delay.schedule_ms";
inline constexpr const char* kKeyW9CpuPercent = "W9.cpu_percent_of_core";
inline constexpr const char* kKeyW9Wakeups = "W9.wakeups_per_second";
inline constexpr const char* kKeyW9Window = "W9.window_s";

// Every metric the configuration produces, in table order.
std::vector<MetricDef> MetricDefs(const BenchConfig& config);

// A row whose samples are numerator / denominator, per repetition.
struct DerivedRatio {
  std::string key;
  std::string numerator;
  std::string denominator;
};
std::vector<DerivedRatio> DerivedRatios(const BenchConfig& config);

struct Failure {
  std::string workload;
  std::string impl;
  int rep;
  std::string message;
};

class Results {
 public:
  Results(const BenchConfig& config, std::vector<std::string> impls);

  // Files one repetition's output (one variant of it, for the workloads that
  // have variants), and the derived ratios it completes. `workload` names the
  // run in failures, notes and counters: "W3", or "W1 P=2" for a variant.
  void Record(const std::string& workload, const std::string& impl, int rep,
              RepOutput out);

  const std::vector<MetricDef>& defs() const { return defs_; }
  const std::vector<std::string>& impls() const { return impls_; }
  const std::vector<Failure>& failures() const { return failures_; }
  const std::vector<std::string>& notes() const { return notes_; }

  // Samples of `key` for `impl` in repetition order; empty if not run.
  const std::vector<double>& Samples(const std::string& impl,
                                     const std::string& key) const;
  std::optional<Summary> Summarize(const std::string& impl,
                                   const std::string& key) const;
  // Every W3 lateness sample of `impl`, all repetitions, sorted (µs).
  std::vector<double> Lateness(const std::string& impl) const;
  // Counters per "<workload>/<impl>/rep<n>" (workload as given to Record()).
  const std::map<std::string, CounterMap>& counters() const { return counters_; }

 private:
  void AddSample(const std::string& impl, const std::string& key, int rep,
                 double value);

  std::vector<MetricDef> defs_;
  std::vector<DerivedRatio> ratios_;
  std::vector<std::string> impls_;
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
  // The same values by repetition: impl -> key -> rep -> value.
  std::map<std::string, std::map<std::string, std::map<int, double>>> by_rep_;
  std::map<std::string, std::vector<double>> lateness_;
  std::map<std::string, CounterMap> counters_;
  std::vector<Failure> failures_;
  std::vector<std::string> notes_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_RESULTS_H_
