#include "tools/bench/runners.h"

#include <cstdlib>

#include <fmt/format.h>

#include "tools/bench/asio_bench.h"
#include "tools/bench/heap_bench.h"
#include "tools/bench/tickwheel_bench.h"
#include "tools/bench/workloads_throughput.h"
#include "tools/bench/workloads_timing.h"

namespace tickwheel::bench {
namespace {

template <BenchTimer T>
RepOutput Run(const std::string& workload, const BenchConfig& config,
              int producers, uint64_t seed) {
  if (workload == "W1") return RunW1<T>(config, producers, seed);
  if (workload == "W2") return RunW2<T>(config, producers, seed);
  if (workload == "W3") return RunW3<T>(config, seed);
  if (workload == "W4") return RunW4<T>(config, seed);
  if (workload == "W5") return RunW5<T>(config);
  if (workload == "W6") return RunW6<T>(config, seed);
  fmt::print(stderr, "bench: unknown workload {}\n", workload);
  std::abort();
}

}  // namespace

RunnerFn Runner(const std::string& impl) {
  if (impl == TickwheelBench::kName) return &Run<TickwheelBench>;
  if (impl == AsioBench::kName) return &Run<AsioBench>;
  if (impl == HeapBench::kName) return &Run<HeapBench>;
  return nullptr;
}

}  // namespace tickwheel::bench
