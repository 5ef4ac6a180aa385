// tools/bench/runners.h
// -----------------------------------------------------------------------------
// The bridge from names to templates: Runner("asio") returns a function that
// runs one repetition of any workload ("W1".."W6") on a fresh AsioBench, and
// so on for "tickwheel" and "heap". The workload templates are instantiated
// here (runners.cc), once per model.

#ifndef TICKWHEEL_TOOLS_BENCH_RUNNERS_H_
#define TICKWHEEL_TOOLS_BENCH_RUNNERS_H_

#include <cstdint>
#include <string>

#include "tools/bench/bench_config.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// `producers` is used by W1 and W2 only; `seed` by the workloads with random
// delays.
using RunnerFn = RepOutput (*)(const std::string& workload,
                               const BenchConfig& config, int producers,
                               uint64_t seed);

// nullptr for an unknown name.
RunnerFn Runner(const std::string& impl);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_RUNNERS_H_
