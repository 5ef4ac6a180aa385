// tools/bench/workloads/schedule.h
// -----------------------------------------------------------------------------
// What a call costs: the schedule, schedule_cancel and schedule_depth
// workloads. Their delays are far (10-60 s), so that nothing fires.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

// schedule: P threads schedule N timeouts 10-60 s away in total, dropping the
// handles (fire-and-forget); a run per P. Per call: the wall time its caller
// sees, the caller's CPU, and the CPU of every other thread until the process
// is idle again (the filing tickwheel and Asio hand to their own thread, and
// the heap timer does inside the call); the minor page faults the callers
// take, per million calls (first touches of memory a timer did not fault in
// ahead of them); and the aggregate throughput.
struct Schedule {
  static constexpr const char* kName = "schedule";
  static constexpr const char* kWhat =
      "P threads schedule N far timeouts: cost, throughput";
  static constexpr Metric kMetrics[] = {
      {"ns_per_call", "ns per call", "ns", Better::kLower, 1},
      {"caller_cpu_ns", "caller CPU per call", "ns", Better::kLower, 1},
      {"timer_cpu_ns", "timer threads' CPU per call", "ns", Better::kLower, 1},
      {"faults_per_m", "caller page faults per 1M calls", "faults",
       Better::kLower, 0},
      {"throughput_mps", "throughput", "M/s", Better::kHigher, 2}};
  static constexpr const char* kRatioMetric = "throughput_mps";
  static std::vector<Variant> Variants(const BenchConfig& c) {
    return ProducerVariants(c);
  }
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c,
                                                  int64_t producers,
                                                  uint64_t seed) {
    return FarDelays(c, c.n, static_cast<int>(producers), seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t producers, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, producers, seed);
    std::atomic<int64_t> runs{0};
    T timer(BenchTimerOptions{});
    const double cpu0 = ProcessCpuSeconds();
    const ProducerTimes t =
        RunProducers(static_cast<int>(producers),
                     [&](int p) { ScheduleCounting(timer, delays[p], runs); });
    WaitUntilIdle(out);
    const double n = static_cast<double>(c.n);
    out.values["ns_per_call"] = t.wall_ns / n;
    out.values["caller_cpu_ns"] = t.cpu_ns / n;
    out.values["timer_cpu_ns"] =
        ((ProcessCpuSeconds() - cpu0) * 1e9 - t.cpu_ns) / n;
    out.values["faults_per_m"] = t.faults / n * 1e6;
    out.values["throughput_mps"] = n / t.span_ns * 1e3;
    StopAndCheck(timer, c.n, runs, out);
    return out;
  }
};

// schedule_cancel: P threads each cancel every timeout right after scheduling
// it (a request answered before its timeout), N pairs in total, delays
// 10-60 s; a run per P. Per pair: the caller's wall time and CPU; and the
// resident memory still held once the process is idle again, after
// malloc_trim: what cancelled timeouts did not give back. Where the timer's
// answers are exact, every cancel must succeed and nothing stay pending.
struct ScheduleCancel {
  static constexpr const char* kName = "schedule_cancel";
  static constexpr const char* kWhat =
      "P threads schedule and at once cancel: cost, memory kept";
  static constexpr Metric kMetrics[] = {
      {"ns_per_pair", "ns per schedule+cancel", "ns", Better::kLower, 1},
      {"caller_cpu_ns", "caller CPU per pair", "ns", Better::kLower, 1},
      {"rss_held_mb", "RSS held afterwards", "MB", Better::kLower, 1}};
  static std::vector<Variant> Variants(const BenchConfig& c) {
    return ProducerVariants(c);
  }
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c,
                                                  int64_t producers,
                                                  uint64_t seed) {
    return FarDelays(c, c.n, static_cast<int>(producers), seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t producers, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, producers, seed);
    std::atomic<int64_t> runs{0}, cancelled{0};
    const int64_t rss0 = TrimmedResidentBytes();
    T timer(BenchTimerOptions{});
    const ProducerTimes t =
        RunProducers(static_cast<int>(producers), [&](int p) {
          int64_t ok =
              0;  // added up once per thread: no shared write while timed
          for (int64_t d : delays[p]) {
            typename T::Handle h = timer.Schedule(CountingTask{&runs, d},
                                                  std::chrono::nanoseconds(d));
            ok += timer.Cancel(h) ? 1 : 0;
          }
          cancelled += ok;
        });
    WaitUntilIdle(out);
    out.values["ns_per_pair"] = t.wall_ns / static_cast<double>(c.n);
    out.values["caller_cpu_ns"] = t.cpu_ns / static_cast<double>(c.n);
    out.values["rss_held_mb"] = (TrimmedResidentBytes() - rss0) / 1e6;
    if (T::kExactPending && (timer.Pending() != 0 || cancelled.load() != c.n)) {
      out.failures.push_back(
          fmt::format("{} of {} cancels succeeded, {} pending",
                      cancelled.load(), c.n, timer.Pending()));
    }
    StopAndCheck(timer, 0, runs, out);
    return out;
  }
};

// schedule_depth: does a call get slower as the timer fills? A run per depth D
// in --depth_pending: D timeouts 10-60 s away, untimed; once the timer reports
// them armed and the process is idle (the timed calls must not race the
// filing of the D), one thread makes 200,000 more calls, timed: wall time per
// call, and the deepest D's over the shallowest's.
struct ScheduleDepth {
  static constexpr const char* kName = "schedule_depth";
  static constexpr const char* kWhat =
      "one thread schedules on top of D pending: cost by depth";
  static constexpr Metric kMetrics[] = {
      {"ns_per_call", "ns per call", "ns", Better::kLower, 1}};
  static constexpr const char* kRatioMetric = "ns_per_call";
  static std::vector<Variant> Variants(const BenchConfig& c) {
    std::vector<Variant> v;
    for (int64_t d : c.depth_pending) v.push_back(PendingVariant(d));
    return v;
  }
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c,
                                                  int64_t depth,
                                                  uint64_t seed) {
    return FarDelays(c, depth + c.depth_calls, 1, seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t depth, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, depth, seed)[0];
    std::atomic<int64_t> runs{0};
    T timer(BenchTimerOptions{});
    const std::span<const int64_t> all(delays);
    ScheduleCounting(timer, all.first(depth), runs);
    WaitArmed(timer, depth, out);
    WaitUntilIdle(out);
    const ProducerTimes t = RunProducers(
        1, [&](int) { ScheduleCounting(timer, all.subspan(depth), runs); });
    out.values["ns_per_call"] = t.wall_ns / static_cast<double>(c.depth_calls);
    StopAndCheck(timer, depth + c.depth_calls, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_SCHEDULE_H_
