// tools/bench/workloads/schedule.h
// -----------------------------------------------------------------------------
// schedule: P threads schedule N timeouts 10-60 s away in total, dropping the
// handles (fire-and-forget); a run per P. Per call: the wall time its caller
// sees, the caller's CPU, and the CPU of every other thread until the process
// is idle again (the filing tickwheel and Asio hand to their own thread, and
// the heap timer does inside the call); the minor page faults the callers
// take, per million calls (first touches of memory a timer did not fault in
// ahead of them); and the aggregate throughput.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct Schedule {
  static constexpr const char* kName = "schedule";
  static constexpr const char* kWhat = "P threads schedule N far timeouts: cost, throughput";
  static constexpr Metric kMetrics[] = {
      {"ns_per_call", "ns per call", "ns", Better::kLower, 1},
      {"caller_cpu_ns", "caller CPU per call", "ns", Better::kLower, 1},
      {"timer_cpu_ns", "timer threads' CPU per call", "ns", Better::kLower, 1},
      {"faults_per_m", "caller page faults per 1M calls", "faults", Better::kLower, 0},
      {"throughput_mps", "throughput", "M/s", Better::kHigher, 2}};
  static constexpr const char* kRatioMetric = "throughput_mps";
  static std::vector<Variant> Variants(const BenchConfig& c) { return ProducerVariants(c); }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t producers, uint64_t seed) {
    RepOutput out;
    const auto delays = FarDelays(c, c.n, static_cast<int>(producers), seed);
    std::atomic<int64_t> runs{0};
    T timer(BenchTimerOptions{});
    const double cpu0 = ProcessCpuSeconds();
    const ProducerTimes t = RunProducers(static_cast<int>(producers), [&](int p) {
      for (int64_t d : delays[p])
        timer.Schedule(CountingTask{&runs, d}, std::chrono::nanoseconds(d));
    });
    WaitUntilIdle(out);
    const double n = static_cast<double>(c.n);
    out.values["ns_per_call"] = t.wall_ns / n;
    out.values["caller_cpu_ns"] = t.cpu_ns / n;
    out.values["timer_cpu_ns"] = ((ProcessCpuSeconds() - cpu0) * 1e9 - t.cpu_ns) / n;
    out.values["faults_per_m"] = t.faults / n * 1e6;
    out.values["throughput_mps"] = n / t.span_ns * 1e3;
    StopAndCheck(timer, c.n, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_
