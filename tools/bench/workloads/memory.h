// tools/bench/workloads/memory.h
// -----------------------------------------------------------------------------
// Resident memory: the memory workload (pending timeouts) and release (what
// is left once they are cancelled).

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

// memory: N timeouts 10-60 s away left pending, handles dropped: (RSS after -
// RSS before) / N, the 16-byte task included, both read after malloc_trim and
// the second once the timer reports all armed and the process is idle
// (tickwheel's worker has filed them all).
struct Memory {
  static constexpr const char* kName = "memory";
  static constexpr const char* kWhat =
      "N timeouts left pending: resident bytes per timeout";
  static constexpr Metric kMetrics[] = {{"bytes_per_pending",
                                         "bytes per pending timeout", "B",
                                         Better::kLower, 1}};
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c, int64_t,
                                                  uint64_t seed) {
    return FarDelays(c, c.n, 1, seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, 0, seed)[0];
    std::atomic<int64_t> runs{0};
    const int64_t rss0 = TrimmedResidentBytes();
    T timer(BenchTimerOptions{});
    ScheduleCounting(timer, delays, runs);
    WaitArmed(timer, c.n, out);
    WaitUntilIdle(out);
    out.values["bytes_per_pending"] =
        (TrimmedResidentBytes() - rss0) / static_cast<double>(c.n);
    StopAndCheck(timer, c.n, runs, out);
    return out;
  }
};

// release: N timeouts 10-60 s away left pending, then all cancelled and the
// handles dropped, while the timer keeps running with nothing to do: the
// resident memory above what the process had before them, after malloc_trim,
// once the process has been left alone for a while (10 s): what a burst
// leaves behind after it is gone.
struct Release {
  static constexpr const char* kName = "release";
  static constexpr const char* kWhat =
      "N pending then all cancelled: RSS held a while later";
  static constexpr Metric kMetrics[] = {
      {"rss_peak_mb", "RSS above baseline, N pending", "MB", Better::kLower, 1},
      {"rss_after_mb", "RSS above baseline, later", "MB", Better::kLower, 1}};
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c, int64_t,
                                                  uint64_t seed) {
    return FarDelays(c, c.n, 1, seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, 0, seed)[0];
    std::atomic<int64_t> runs{0};
    const int64_t rss0 = TrimmedResidentBytes();
    T timer(BenchTimerOptions{});
    {
      std::vector<typename T::Handle> handles;
      handles.reserve(delays.size());
      for (int64_t d : delays) {
        handles.push_back(timer.Schedule(CountingTask{&runs, d},
                                         std::chrono::nanoseconds(d)));
      }
      WaitArmed(timer, c.n, out);
      WaitUntilIdle(out);
      out.values["rss_peak_mb"] = (ResidentBytes() - rss0) / 1e6;
      for (const auto& h : handles) timer.Cancel(h);
    }
    SleepNanos(static_cast<int64_t>(c.release_wait_s * 1e9));
    out.values["rss_after_mb"] = (TrimmedResidentBytes() - rss0) / 1e6;
    if (T::kExactPending && timer.Pending() != 0) {
      out.failures.push_back(
          fmt::format("{} pending after cancelling all", timer.Pending()));
    }
    StopAndCheck(timer, 0, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_MEMORY_H_
