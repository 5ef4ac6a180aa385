// tools/bench/workloads/release.h
// -----------------------------------------------------------------------------
// release: N timeouts 10-60 s away left pending, then all cancelled and the
// handles dropped, while the timer keeps running with nothing to do: the
// resident memory above what the process had before them, after malloc_trim,
// once the process has been left alone for a while (10 s): what a burst
// leaves behind after it is gone.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_RELEASE_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_RELEASE_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct Release {
  static constexpr const char* kName = "release";
  static constexpr const char* kWhat = "N pending then all cancelled: RSS held a while later";
  static constexpr Metric kMetrics[] = {
      {"rss_peak_mb", "RSS above baseline, N pending", "MB", Better::kLower, 1},
      {"rss_after_mb", "RSS above baseline, later", "MB", Better::kLower, 1}};
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
    {
      std::vector<typename T::Handle> handles;
      handles.reserve(delays.size());
      for (int64_t d : delays) {
        handles.push_back(timer.Schedule(CountingTask{&runs, d}, std::chrono::nanoseconds(d)));
      }
      WaitArmed(timer, c.n, out);
      WaitUntilIdle(out);
      out.values["rss_peak_mb"] = (ResidentBytes() - rss0) / 1e6;
      for (const auto& h : handles) timer.Cancel(h);
    }
    SleepNanos(static_cast<int64_t>(c.release_wait_s * 1e9));
    TrimMalloc();
    out.values["rss_after_mb"] = (ResidentBytes() - rss0) / 1e6;
    if (T::kExactPending && timer.Pending() != 0) {
      out.failures.push_back(fmt::format("{} pending after cancelling all", timer.Pending()));
    }
    StopAndCheck(timer, 0, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_RELEASE_H_
