// tools/bench/workloads/lateness.h
// -----------------------------------------------------------------------------
// lateness: how late, never how early, a timeout runs. N timeouts 10 ms-2 s
// away scheduled back to back from one thread; tickwheel at --tick_ms (a
// wheel runs a task at the first tick boundary after its deadline, so the
// tick bounds its lateness). Reports p50, p99 (nearest rank) and max of the
// run's N, and early fires, which also fail the run. Two variants: the
// default slack (one tick: the first tick boundary after the deadline), and
// slack 0 (the worker wakes for each deadline). Asio and the heap timer have
// no such option and run the same way in both.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_

#include "tools/bench/workloads.h"
#include "tools/bench/workloads/run_times.h"

namespace tickwheel::bench {

struct Lateness {
  static constexpr const char* kName = "lateness";
  static constexpr const char* kWhat = "N timeouts 10 ms-2 s away: how late each runs";
  static constexpr Metric kMetrics[] = {
      {"p50_us", "p50", "us", Better::kLower, 0},
      {"p99_us", "p99", "us", Better::kLower, 0},
      {"max_us", "max", "us", Better::kLower, 0},
      {"early_fires", "early fires", "count", Better::kNeither, 0},
  };
  static constexpr const char* kRatioMetric = "";
  static std::vector<Variant> Variants(const BenchConfig&) {
    return {{"tick", "default slack", 0}, {"slack0", "slack 0", 1}};
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t slack0, uint64_t seed) {
    RepOutput out;
    const auto delays =
        RandomDelays(c.lateness_n, 1, Ms(c.lateness_min_ms), Ms(c.lateness_max_ms), seed)[0];
    RunTimes times(delays.size());
    BenchTimerOptions options = TickOptions(c);
    if (slack0 != 0) options.slack = std::chrono::nanoseconds(0);
    T timer(options);
    ScheduleAndAwait(
        timer, times, [&](size_t i, int64_t) { return delays[i]; }, out);
    const std::vector<double> late = SortedLateness(times, 1e3, out);
    out.values["p50_us"] = Quantile(late, 0.50);
    out.values["p99_us"] = Quantile(late, 0.99);
    out.values["max_us"] = late.empty() ? 0 : late.back();
    out.values["early_fires"] =
        std::count_if(late.begin(), late.end(), [](double l) { return l < 0; });
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_
