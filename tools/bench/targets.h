// tools/bench/targets.h
// -----------------------------------------------------------------------------
// The performance targets of issue #3 for tickwheel, checked against one
// run's results (medians over the repetitions, as in the table):
//   W1, W2 (each P)  at least 3x faster per operation than the heap model,
//                    and faster than Asio;
//   W3               zero early fires in every repetition; p99 lateness at
//                    most one tick (w3_tick_ms) plus 2 ms;
//   W4               at most 96 bytes per pending timeout, task included;
//   W6               at least 5 million expiries per second.
// A target whose inputs were not measured (workload or model not run) is
// reported as "not measured", neither met nor missed.

#ifndef TICKWHEEL_TOOLS_BENCH_TARGETS_H_
#define TICKWHEEL_TOOLS_BENCH_TARGETS_H_

#include <optional>
#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/results.h"

namespace tickwheel::bench {

struct TargetResult {
  std::string id;           // "W1 P=1 vs heap"
  std::string requirement;  // ">= 3x faster per op than heap"
  std::string measured;     // "heap/tickwheel = 4.10x (85.2 vs 349.3 ns/op)"
  std::optional<bool> met;  // nullopt: not measured
};

std::vector<TargetResult> EvaluateTargets(const Results& results,
                                          const BenchConfig& config);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_TARGETS_H_
