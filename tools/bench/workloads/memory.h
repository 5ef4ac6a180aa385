// tools/bench/workloads/memory.h
// -----------------------------------------------------------------------------
// memory: N timeouts 10-60 s away left pending, handles dropped: (RSS after -
// RSS before) / N, the 16-byte task included, both read after malloc_trim and
// the second once the timer reports all armed and the process is idle
// (tickwheel's worker has filed them all).

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct Memory {
  static constexpr const char* kName = "memory";
  static constexpr const char* kWhat = "N timeouts left pending: resident bytes per timeout";
  static constexpr Metric kMetrics[] = {
      {"bytes_per_pending", "bytes per pending timeout", "B", Better::kLower, 1}};
  static constexpr const char* kRatioMetric = "";
  static std::vector<Variant> Variants(const BenchConfig&) { return {{"", "", 0}}; }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t, uint64_t seed) {
    RepOutput out;
    const auto delays = FarDelays(c, c.n, 1, seed)[0];
    std::atomic<int64_t> runs{0};
    TrimMalloc();
    const int64_t rss0 = ResidentBytes();
    T timer(BenchTimerOptions{});
    for (int64_t d : delays) timer.Schedule(CountingTask{&runs, d}, std::chrono::nanoseconds(d));
    WaitArmed(timer, c.n, out);
    WaitUntilIdle(out);
    TrimMalloc();
    out.values["bytes_per_pending"] = (ResidentBytes() - rss0) / static_cast<double>(c.n);
    StopAndCheck(timer, c.n, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_
