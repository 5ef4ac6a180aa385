// tools/bench/report.h
// -----------------------------------------------------------------------------
// The run's output. PrintReport: where and how the run was made; a row per
// metric and a column per timer, "median [min-max]" over the repetitions,
// plus "tw/<other>", tickwheel's median over the other's from the same run
// (for "lower" rows below 1.00x favours tickwheel, for "higher" rows above
// 1.00x does); the goals' verdicts; notes; the correctness checks.
// WriteMarkdown: a line on how the run was made and the table as a Markdown
// (GitHub) table, as docs/BENCHMARKS.md shows it.
// WriteJson: the same as one JSON object with the members
// run {host, compiler, memory, memory_primed_mib, load_average_start/end,
// elapsed_s, command, flags}, metrics [{key, workload, label, unit, better,
// results {<timer>: {median, min, max, samples}}}], goals [{workload, metric,
// baseline, measure ("median" or "spread"), comparison, bound, unit, name,
// reason, value, met}] (value and met null if not measured), failures [{run,
// impl, rep, message}], notes.

#ifndef TICKWHEEL_TOOLS_BENCH_REPORT_H_
#define TICKWHEEL_TOOLS_BENCH_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/goals.h"
#include "tools/bench/results.h"

namespace tickwheel::bench {

struct RunInfo {
  std::string host, compiler, memory;  // memory: MemoryEnvironment()
  std::string load_start, load_end;    // 1/5/15 min
  double elapsed_s = 0;
};

RunInfo CollectRunInfo();
std::string PrimingText(const BenchConfig& config);  // "" unless in lab mode
void PrintReport(std::FILE* out, const Results& results,
                 const std::vector<GoalResult>& goals,
                 const BenchConfig& config, const RunInfo& info);
bool WriteMarkdown(const std::string& path, const Results& results,
                   const BenchConfig& config,
                   const RunInfo& info);  // false if it cannot be written
bool WriteJson(const std::string& path, const Results& results,
               const std::vector<GoalResult>& goals, const BenchConfig& config,
               const RunInfo& info);  // false if the file cannot be written

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_REPORT_H_
