// tools/bench/workloads.h
// -----------------------------------------------------------------------------
// The registry: every workload in run order, each one struct in workloads/
// (related ones share a file: schedule.h holds schedule, schedule_cancel and
// schedule_depth), and the only place their names become keys and row labels.
// A workload struct has
//   kName, kWhat         "schedule" (flags, keys, rows) and a line for --help
//   kMetrics[]           what each run reports, by metric name
//   kRatioMetric         optional: a metric also shown as last / first variant
//   Variants(config)     optional: its runs (per producer count, depth, ...);
//                        without, one run and no variant in keys and labels
//   Delays(config, variant, seed)  optional: the run's random delays (ns), one
//                        part per producer; Run<T> schedules these, and the
//                        Netty harness (netty_bench.h) receives the same
//   Run<T>(config, variant, seed)  one repetition on a fresh timer T
// Each such workload runs on Netty too: its Java twin in
// tools/bench/netty/NettyBench.java, in a JVM of its own.
// The owner-thread workloads (workloads/owner_thread.h) have no Run<T>: a
// function per timer instead, as coro_deadline. A variant may be limited to
// some of the workload's timers (Variant::impls); the others have no cell in
// its rows.
// Keys are "<workload>.<variant>.<metric>" ("schedule.p2.ns_per_call"), or
// "<workload>.<metric>" without variants; labels "<workload>, <variant>:
// <metric>" ("schedule, 2 producers: ns per call"). A ratio row divides the
// last variant's value by the first's within a repetition
// ("schedule.p2_over_p1.throughput_mps").

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_H_

#include <map>
#include <string>
#include <vector>

#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

enum class Better { kLower, kHigher, kNeither };

struct Metric {
  const char *name, *label, *unit;  // "ns_per_call", "ns per call", "ns"
  Better better;
  int decimals;  // in the table
};

struct Variant {
  std::string key, label;  // "p2", "2 producers"; "" without variants
  int64_t value;           // what Run() receives
  std::vector<std::string> impls = {};  // empty: every timer of the workload
  bool Runs(const std::string& impl) const;
};

std::vector<Variant> ProducerVariants(const BenchConfig& c);
Variant PendingVariant(int64_t n);  // "pending1000000", "1M pending"

using RunFn = RepOutput (*)(const BenchConfig& config, int64_t variant,
                            uint64_t seed);

struct Workload {
  std::string name, what;
  std::vector<Metric> metrics;
  // A metric also reported as the second variant's over the first's.
  std::string ratio_metric;
  std::vector<Variant> (*variants)(const BenchConfig&);
  std::map<std::string, RunFn> run;  // by timer name; warms up first
  bool Runs(const Variant& v, const std::string& impl) const {
    return run.count(impl) > 0 && v.Runs(impl);
  }
};

struct Row {
  std::string key, workload, label, unit;
  Better better;
  int decimals;
  std::string numerator, denominator;  // a ratio row's keys
};

const std::vector<Workload>& Workloads();
const Workload* FindWorkload(const std::string& name);
std::string KeyPrefix(const Workload& w, const Variant& v);  // "schedule.p2."
std::string RunLabel(const Workload& w,
                     const Variant& v);            // "schedule, 2 producers"
std::vector<Row> Rows(const BenchConfig& config);  // in table order

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_H_
