// tools/bench/workloads/mass_expiry.h
// -----------------------------------------------------------------------------
// mass_expiry: how fast a timer runs many timeouts that fall due together: N
// deadlines uniform in a 100 ms window opening 3 s after the first call (all
// are armed before the first is due); tickwheel at --tick_ms. Reports N per
// second of the timer thread's CPU between the first and the last run (its
// capacity, which neither the offered rate nor preemption distorts), N per
// wall second over that span (capped by the offered rate N / window), and
// the last deadline to the last run.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_MASS_EXPIRY_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_MASS_EXPIRY_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct MassExpiry {
  static constexpr const char* kName = "mass_expiry";
  static constexpr const char* kWhat =
      "N timeouts due within one 100 ms window: expiry rate";
  static constexpr Metric kMetrics[] = {
      {"per_worker_cpu_mps", "expiries per worker CPU second", "M/s",
       Better::kHigher, 2},
      {"per_wall_mps", "expiries per wall second", "M/s", Better::kHigher, 2},
      {"last_run_ms", "last deadline to last run", "ms", Better::kLower, 1},
  };

  // The first and the last task to run read the clocks; all run on the
  // timer's one thread, so every field has a single writer.
  struct Record {
    int64_t n = 0, first_ns = 0, last_ns = 0, first_cpu = 0, last_cpu = 0;
    std::atomic<int64_t> done{0};
  };
  struct Task {
    Record* r;
    int64_t payload;
    void operator()() const {
      const int64_t k = r->done.load(std::memory_order_relaxed) + 1;
      if (k == 1) r->first_ns = NowNanos(), r->first_cpu = ThreadCpuNanos();
      if (k == r->n) r->last_ns = NowNanos(), r->last_cpu = ThreadCpuNanos();
      r->done.store(k, std::memory_order_release);
    }
  };

  // The offsets of the deadlines into the window.
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c, int64_t,
                                                  uint64_t seed) {
    return RandomDelays(c.n, 1, {}, Ms(c.mass_expiry_window_ms), seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t, uint64_t seed) {
    RepOutput out;
    const auto offsets = Delays(c, 0, seed)[0];
    Record r;
    r.n = c.n;
    T timer(TickOptions(c));
    const int64_t open = NowNanos() + Ms(c.mass_expiry_lead_ms).count();
    for (int64_t o : offsets)
      timer.Schedule(Task{&r, o},
                     std::chrono::nanoseconds(open + o - NowNanos()));
    if (NowNanos() > open) out.notes.push_back("scheduling overran the lead");
    const int64_t last_deadline =
        open + *std::max_element(offsets.begin(), offsets.end());
    AwaitRuns(timer, r.done, r.n, last_deadline, out);
    if (r.done.load() < r.n) return out;
    const auto rate = [&](int64_t ns) {
      return r.n / std::max(1.0, static_cast<double>(ns)) * 1e3;
    };
    out.values["per_worker_cpu_mps"] = rate(r.last_cpu - r.first_cpu);
    out.values["per_wall_mps"] = rate(r.last_ns - r.first_ns);
    out.values["last_run_ms"] =
        static_cast<double>(r.last_ns - last_deadline) / 1e6;
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_MASS_EXPIRY_H_
