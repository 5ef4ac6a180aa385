// tools/bench/workloads/schedule_cancel.h
// -----------------------------------------------------------------------------
// schedule_cancel: P threads each cancel every timeout right after scheduling
// it (a request answered before its timeout), N pairs in total, delays
// 10-60 s; a run per P. Per pair: the caller's wall time and CPU; and the
// resident memory still held once the process is idle again, after
// malloc_trim: what cancelled timeouts did not give back. Where the timer's
// answers are exact, every cancel must succeed and nothing stay pending.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_CANCEL_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_CANCEL_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct ScheduleCancel {
  static constexpr const char* kName = "schedule_cancel";
  static constexpr const char* kWhat = "P threads schedule and at once cancel: cost, memory kept";
  static constexpr Metric kMetrics[] = {
      {"ns_per_pair", "ns per schedule+cancel", "ns", Better::kLower, 1},
      {"caller_cpu_ns", "caller CPU per pair", "ns", Better::kLower, 1},
      {"rss_held_mb", "RSS held afterwards", "MB", Better::kLower, 1}};
  static constexpr const char* kRatioMetric = "";
  static std::vector<Variant> Variants(const BenchConfig& c) { return ProducerVariants(c); }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t producers, uint64_t seed) {
    RepOutput out;
    const auto delays = FarDelays(c, c.n, static_cast<int>(producers), seed);
    std::atomic<int64_t> runs{0}, cancelled{0};
    TrimMalloc();
    const int64_t rss0 = ResidentBytes();
    T timer(BenchTimerOptions{});
    const ProducerTimes t = RunProducers(static_cast<int>(producers), [&](int p) {
      int64_t ok = 0;  // added up once per thread: no shared write while timed
      for (int64_t d : delays[p]) {
        typename T::Handle h = timer.Schedule(CountingTask{&runs, d}, std::chrono::nanoseconds(d));
        ok += timer.Cancel(h) ? 1 : 0;
      }
      cancelled += ok;
    });
    WaitUntilIdle(out);
    out.values["ns_per_pair"] = t.wall_ns / static_cast<double>(c.n);
    out.values["caller_cpu_ns"] = t.cpu_ns / static_cast<double>(c.n);
    TrimMalloc();
    out.values["rss_held_mb"] = (ResidentBytes() - rss0) / 1e6;
    if (T::kExactPending && (timer.Pending() != 0 || cancelled.load() != c.n)) {
      out.failures.push_back(fmt::format("{} of {} cancels succeeded, {} pending", cancelled.load(),
                                         c.n, timer.Pending()));
    }
    StopAndCheck(timer, 0, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_CANCEL_H_
