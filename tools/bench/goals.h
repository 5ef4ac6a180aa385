// tools/bench/goals.h
// -----------------------------------------------------------------------------
// The project's performance goals for tickwheel as one table (goals.cc): a
// metric (workload + the rest of its key), a comparison, a bound, what the
// goal means and why a user cares. With a baseline the value is the
// baseline's median over tickwheel's ("heap / tickwheel >= 3x": three times
// cheaper than the heap timer of the same run; for a rate, "libuv /
// tickwheel <= 1x": at least as fast); without, tickwheel's median. A spread
// goal takes tickwheel's slowest repetition over its fastest instead (max /
// min of its samples, each from a fresh process), and needs two of them. In
// the owner-thread workloads tickwheel is its LocalTimer, and in their
// "producer" variant its Timer, so a ratio row compares the two.
// Every goal is judged alike; one whose metric this run did not measure is
// neither met nor missed. The goals are stated for the default flags and an
// optimised build; the report says when a run differs.

#ifndef TICKWHEEL_TOOLS_BENCH_GOALS_H_
#define TICKWHEEL_TOOLS_BENCH_GOALS_H_

#include <optional>
#include <string>
#include <vector>

#include "tools/bench/results.h"

namespace tickwheel::bench {

enum class Measure {
  kMedian,  // tickwheel's median, or the baseline's median over tickwheel's
  kSpread,  // tickwheel's max / min over the repetitions
};

struct Goal {
  const char* workload;  // "schedule_depth"
  const char* metric;    // "pending1000000.ns_per_call"
  const char* baseline;  // "" or a timer of kTimers: "heap", "libuv", ...
  bool at_most;          // value <= bound; else value >= bound
  double bound;
  const char* unit;  // of the bound: "ns", "x", ...
  const char* name;  // "schedule, 1M pending: ns per call"
  const char* reason;
  Measure measure = Measure::kMedian;
};

struct GoalResult {
  const Goal* goal;
  std::optional<Summary> tickwheel, baseline;  // of the goal's metric
  std::optional<double> value;  // what the bound is compared with
  std::optional<bool> met;      // unset: not measured
};

const std::vector<Goal>& Goals();
std::vector<GoalResult> EvaluateGoals(const Results& results);
std::string GoalText(const Goal& goal);              // "<name> <= 40 ns"
std::string MeasuredText(const GoalResult& result);  // "50.9 [49.7-57.7] ns"

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_GOALS_H_
