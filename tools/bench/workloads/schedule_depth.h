// tools/bench/workloads/schedule_depth.h
// -----------------------------------------------------------------------------
// schedule_depth: does a call get slower as the timer fills? A run per depth D
// in --depth_pending: D timeouts 10-60 s away, untimed; once the timer reports
// them armed and the process is idle (the timed calls must not race the
// filing of the D), one thread makes 200,000 more calls, timed: wall time per
// call, and the deepest D's over the shallowest's.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_DEPTH_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_DEPTH_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct ScheduleDepth {
  static constexpr const char* kName = "schedule_depth";
  static constexpr const char* kWhat = "one thread schedules on top of D pending: cost by depth";
  static constexpr Metric kMetrics[] = {{"ns_per_call", "ns per call", "ns", Better::kLower, 1}};
  static constexpr const char* kRatioMetric = "ns_per_call";
  static std::vector<Variant> Variants(const BenchConfig& c) {
    std::vector<Variant> v;
    for (int64_t d : c.depth_pending) v.push_back(PendingVariant(d));
    return v;
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t depth, uint64_t seed) {
    RepOutput out;
    const auto delays = FarDelays(c, depth + c.depth_calls, 1, seed)[0];
    std::atomic<int64_t> runs{0};
    T timer(BenchTimerOptions{});
    const auto schedule = [&](int64_t from, int64_t to) {
      for (int64_t i = from; i < to; ++i) {
        timer.Schedule(CountingTask{&runs, i}, std::chrono::nanoseconds(delays[i]));
      }
    };
    schedule(0, depth);
    WaitArmed(timer, depth, out);
    WaitUntilIdle(out);
    const ProducerTimes t = RunProducers(1, [&](int) { schedule(depth, depth + c.depth_calls); });
    out.values["ns_per_call"] = t.wall_ns / static_cast<double>(c.depth_calls);
    StopAndCheck(timer, depth + c.depth_calls, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_DEPTH_H_
