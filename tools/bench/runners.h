// tools/bench/runners.h
// -----------------------------------------------------------------------------
// The bridge from names to templates: Runner("asio") returns a function that
// runs one repetition of any workload ("W1".."W9") on a fresh AsioBench, and
// so on for "tickwheel" and "heap". The workload templates are instantiated
// here (runners.cc), once per model.
//
// Some workloads run once per variant, each variant its own run (and child
// process): W1 and W2 per producer count, W7 per pending depth D, W8 per
// kind of burst (same deadline, same delay). Variants() lists them.

#ifndef TICKWHEEL_TOOLS_BENCH_RUNNERS_H_
#define TICKWHEEL_TOOLS_BENCH_RUNNERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// `variant`: the producer count for W1 and W2, the depth D for W7,
// kW8SameDeadline, kW8SameDeadlineCounted or kW8SameDelay
// (workloads_timing.h) for W8, 0 for the others. `seed` is used by the workloads with random delays.
using RunnerFn = RepOutput (*)(const std::string& workload,
                               const BenchConfig& config, int variant,
                               uint64_t seed);

// nullptr for an unknown name.
RunnerFn Runner(const std::string& impl);

// The variants of `workload` under `config`, in run order ({0} if none).
std::vector<int> Variants(const std::string& workload, const BenchConfig& config);

// How a variant is shown in progress lines: "P=2", "D=1000", "same delay";
// "" for variant 0.
std::string VariantLabel(const std::string& workload, int variant);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_RUNNERS_H_
