// tools/bench/workloads/idle.h
// -----------------------------------------------------------------------------
// idle: what a timer costs while nothing is due, in two runs: one timeout an
// hour away, and N timeouts 10-60 s away; tickwheel at --tick_ms (a wheel
// that woke every tick would pay for it here). Once all are armed and 1 s has
// passed, the process (whose main thread sleeps) is measured for 5 s, cut
// short to end 500 ms before the earliest deadline. Reports CPU as % of a
// core and the timer thread's wake-ups per second.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_IDLE_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_IDLE_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct Idle {
  static constexpr const char* kName = "idle";
  static constexpr const char* kWhat =
      "1, then many timeouts far away: CPU and wake-ups";
  static constexpr Metric kMetrics[] = {
      {"cpu_percent", "CPU", "% core", Better::kLower, 3},
      {"wakeups_per_s", "wake-ups per second", "1/s", Better::kLower, 1},
  };
  static std::vector<Variant> Variants(const BenchConfig& c) {
    if (c.n == 1) return {PendingVariant(1)};
    return {PendingVariant(1), PendingVariant(c.n)};
  }
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c,
                                                  int64_t n, uint64_t seed) {
    if (n == 1) return {{Seconds(3600).count()}};
    return FarDelays(c, n, 1, seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t n, uint64_t seed) {
    RepOutput out;
    const int64_t earliest =
        (n == 1 ? Seconds(3600) : Seconds(c.far_min_s)).count();
    const auto delays = Delays(c, n, seed)[0];
    std::atomic<int64_t> runs{0};
    T timer(TickOptions(c));
    const int64_t t0 = NowNanos();
    ScheduleCounting(timer, delays, runs);
    WaitArmed(timer, n, out);
    SleepNanos(Seconds(c.idle_settle_s).count());
    const int64_t wanted = Seconds(c.idle_s).count();
    const int64_t window =
        std::min(wanted, t0 + earliest - 500'000'000 - NowNanos());
    if (window <= 0)
      out.failures.push_back("no idle window before the first deadline");
    if (window < wanted)
      out.notes.push_back(fmt::format("window cut to {:.2f} s", window / 1e9));
    if (window > 0) {
      const double cpu0 = ProcessCpuSeconds();
      const int64_t wake0 = timer.Wakeups(), w0 = NowNanos();
      SleepNanos(window);
      const double seconds = static_cast<double>(NowNanos() - w0) / 1e9;
      out.values["cpu_percent"] = (ProcessCpuSeconds() - cpu0) / seconds * 100;
      out.values["wakeups_per_s"] =
          static_cast<double>(timer.Wakeups() - wake0) / seconds;
    }
    StopAndCheck(timer, n, runs, out);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_IDLE_H_
