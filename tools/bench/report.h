// tools/bench/report.h
// -----------------------------------------------------------------------------
// The human-readable output of the benchmark (fmt): a header saying when,
// where and how it ran; the table, one row per metric and one column per
// model ("median [min-max]" over the R repetitions), plus one ratio column
// "tickwheel / other" per other model, computed from the medians; the target
// check (targets.h); failed correctness checks and notes.
//
// Reading a ratio: the "better" column says which direction is better for
// the row. For "lower" rows a ratio below 1 means tickwheel is better (0.25x
// = tickwheel needs a quarter of the other's time); for "higher" rows above 1.

#ifndef TICKWHEEL_TOOLS_BENCH_REPORT_H_
#define TICKWHEEL_TOOLS_BENCH_REPORT_H_

#include <cstdio>
#include <string>

#include "tools/bench/bench_config.h"
#include "tools/bench/results.h"
#include "tools/bench/targets.h"

namespace tickwheel::bench {

// Facts about the run, for the header and the JSON file.
struct RunInfo {
  std::string date;       // local time when the run started
  std::string host;       // "2 cores, Linux 6.1.0"
  std::string compiler;   // __VERSION__ and whether NDEBUG is set
  double elapsed_s = 0;   // wall time of all workloads
  std::string load_start;  // /proc/loadavg 1/5/15 min, before the workloads
  std::string load_end;    // ... and after
  std::string memory;      // MemoryEnvironment() (proc_stats.h)
};

RunInfo CollectRunInfo();

void PrintReport(std::FILE* out, const Results& results,
                 const std::vector<TargetResult>& targets,
                 const BenchConfig& config, const RunInfo& info);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_REPORT_H_
