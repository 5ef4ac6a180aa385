// tools/bench/json_report.h
// -----------------------------------------------------------------------------
// --json FILE: the whole run, machine-readable. Layout (one object):
//   run:      date, host, compiler, command, elapsed_s, config (every flag)
//   metrics:  [{key, workload, label, unit, better,
//               results: {<impl>: {median, min, max, samples: [...]}}}]
//   targets:  [{issue (3 or 6), id, requirement, measured,
//               met (true/false/null); issue 6 also: key, unit,
//               tickwheel and heap: {median, min, max} or null,
//               tw_over_heap (from the medians) or null}]
//   issue6_condition_gaps: [how the run differs from issue #6's
//               conditions (targets.h)]
//   w3_lateness_us: {<impl>: {p50, p90, p99, p999, max, count}}
//   counters: {"<workload>/<impl>/rep<n>": {<name>: value}}, workload with
//             its variant where it has one ("W1 P=2/heap/rep1")
//   failures: [{workload, impl, rep, message}], notes: [...]
// Written with fmt; numbers that are not finite become null.

#ifndef TICKWHEEL_TOOLS_BENCH_JSON_REPORT_H_
#define TICKWHEEL_TOOLS_BENCH_JSON_REPORT_H_

#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/report.h"
#include "tools/bench/results.h"
#include "tools/bench/targets.h"

namespace tickwheel::bench {

// Returns false (and leaves a message in `error`) if the file cannot be
// written.
bool WriteJson(const std::string& path, const Results& results,
               const std::vector<TargetResult>& targets,
               const BenchConfig& config, const RunInfo& info,
               std::string& error);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_JSON_REPORT_H_
