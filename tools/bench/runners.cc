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
              int variant, uint64_t seed) {
  if (workload == "W1") return RunW1<T>(config, variant, seed);
  if (workload == "W2") return RunW2<T>(config, variant, seed);
  if (workload == "W3") return RunW3<T>(config, seed);
  if (workload == "W4") return RunW4<T>(config, seed);
  if (workload == "W5") return RunW5<T>(config);
  if (workload == "W6") return RunW6<T>(config, seed);
  if (workload == "W7") return RunW7<T>(config, variant, seed);
  if (workload == "W8") return RunW8<T>(config, variant);
  if (workload == "W9") return RunW9<T>(config, seed);
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

std::vector<int> Variants(const std::string& workload, const BenchConfig& config) {
  if (workload == "W1" || workload == "W2") return config.producers;
  if (workload == "W7") return config.w7_depths;
  if (workload == "W8") return {kW8SameDeadline, kW8SameDeadlineCounted, kW8SameDelay};
  return {0};
}

std::string VariantLabel(const std::string& workload, int variant) {
  if (variant == 0) return "";
  if (workload == "W7") return fmt::format("D={}", variant);
  if (workload == "W8") {
    if (variant == kW8SameDeadline) return "same deadline";
    return variant == kW8SameDeadlineCounted ? "same deadline, counted" : "same delay";
  }
  return fmt::format("P={}", variant);
}

}  // namespace tickwheel::bench
