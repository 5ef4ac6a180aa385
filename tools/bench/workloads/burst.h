// tools/bench/workloads/burst.h
// -----------------------------------------------------------------------------
// burst: N timeouts scheduled back to back from one thread, in two runs.
// "same deadline": every call asks for t0 + 1.5 s, so all fall due at one
// instant after the last call, and the lateness max is the time from it to
// the last run. "same delay": every call asks for 200 ms, so
// the first fall due while later ones are still being scheduled (where a
// per-tick cap on filing, as Netty's, would make them late). tickwheel at
// --tick_ms. Reports lateness p99 and max (run_times.h); early runs fail.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_BURST_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_BURST_H_

#include "tools/bench/workloads.h"
#include "tools/bench/workloads/run_times.h"

namespace tickwheel::bench {

struct Burst {
  static constexpr const char* kName = "burst";
  static constexpr const char* kWhat = "N timeouts due at one instant, or after one delay each";
  static constexpr Metric kMetrics[] = {
      {"p99_ms", "lateness p99", "ms", Better::kLower, 1},
      {"max_ms", "lateness max", "ms", Better::kLower, 1},
  };
  static constexpr const char* kRatioMetric = "";
  static std::vector<Variant> Variants(const BenchConfig&) {
    return {{"same_deadline", "same deadline", 0}, {"same_delay", "same delay", 1}};
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t same_delay, uint64_t) {
    RepOutput out;
    RunTimes times(static_cast<size_t>(c.n));
    T timer(TickOptions(c));
    const int64_t deadline = NowNanos() + Ms(c.burst_lead_ms).count();
    const int64_t delay = Ms(c.burst_delay_ms).count();
    ScheduleAndAwait(
        timer, times, [&](size_t, int64_t now) { return same_delay ? delay : deadline - now; },
        out);
    if (!same_delay && times.deadline.back() > deadline) {
      out.notes.push_back("scheduling overran the deadline");
    }
    const std::vector<double> late = SortedLateness(times, 1e6, out);
    out.values["p99_ms"] = Quantile(late, 0.99);
    out.values["max_ms"] = late.empty() ? 0 : late.back();
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_BURST_H_
