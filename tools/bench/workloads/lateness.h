// tools/bench/workloads/lateness.h
// -----------------------------------------------------------------------------
// How late timeouts run: the lateness workload (RunTimes, a clock read per
// run) and the burst workload (BurstTimes, a sampled clock read).

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_

#include <cmath>

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

// Lateness = run time - the deadline the call asked for, which is the time
// read just before the call plus the delay, so that a timer that reads its
// clock later can only look later, never earlier. Written on the timer's
// thread; read after Stop() has joined it.
struct RunTimes {
  explicit RunTimes(size_t n) : ran_at(n, 0), deadline(n, 0) {}
  std::vector<int64_t> ran_at, deadline;
  std::atomic<int64_t> done{0};
};

struct RecordTask {
  RunTimes* times;
  size_t index;
  void operator()() const {
    times->ran_at[index] = NowNanos();
    times->done.fetch_add(1, std::memory_order_release);
  }
};
static_assert(sizeof(RecordTask) == 16);

// Schedules a RecordTask per slot, back to back, each `delay_of(i, now)`
// ahead, then AwaitRuns().
template <BenchTimer T, typename DelayOf>
void ScheduleAndAwait(T& timer, RunTimes& t, DelayOf&& delay_of,
                      RepOutput& out) {
  for (size_t i = 0; i < t.deadline.size(); ++i) {
    const int64_t now = NowNanos();
    const int64_t d = std::max<int64_t>(0, delay_of(i, now));
    t.deadline[i] = now + d;
    timer.Schedule(RecordTask{&t, i}, std::chrono::nanoseconds(d));
  }
  AwaitRuns(timer, t.done, static_cast<int64_t>(t.deadline.size()),
            *std::max_element(t.deadline.begin(), t.deadline.end()), out);
}

// The p-quantile (0 <= p <= 1) of `sorted`, by nearest rank.
inline double Quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank =
      static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// Lateness of every task that ran, sorted, in `unit_ns` units; a failure if
// any ran early.
inline std::vector<double> SortedLateness(const RunTimes& t, double unit_ns,
                                          RepOutput& out) {
  std::vector<double> late;
  int64_t early = 0;
  for (size_t i = 0; i < t.ran_at.size(); ++i) {
    if (t.ran_at[i] == 0) continue;  // never ran
    early += t.ran_at[i] < t.deadline[i];
    late.push_back(static_cast<double>(t.ran_at[i] - t.deadline[i]) / unit_ns);
  }
  if (early > 0) out.failures.push_back(fmt::format("{} ran early", early));
  std::sort(late.begin(), late.end());
  return late;
}

// lateness: how late, never how early, a timeout runs. N timeouts 10 ms-2 s
// away scheduled back to back from one thread; tickwheel at --tick_ms (a
// wheel runs a task at the first tick boundary after its deadline, so the
// tick bounds its lateness). Reports p50, p99 (nearest rank) and max of the
// run's N, and early fires, which also fail the run. Two variants: the
// default slack (one tick: the first tick boundary after the deadline), and
// slack 0 (the worker wakes for each deadline). Asio and the heap timer have
// no such option and run the same way in both.
struct Lateness {
  static constexpr const char* kName = "lateness";
  static constexpr const char* kWhat =
      "N timeouts 10 ms-2 s away: how late each runs";
  static constexpr Metric kMetrics[] = {
      {"p50_us", "p50", "us", Better::kLower, 0},
      {"p99_us", "p99", "us", Better::kLower, 0},
      {"max_us", "max", "us", Better::kLower, 0},
      {"early_fires", "early fires", "count", Better::kNeither, 0},
  };
  static std::vector<Variant> Variants(const BenchConfig&) {
    return {{"tick", "default slack", 0}, {"slack0", "slack 0", 1}};
  }
  static std::vector<std::vector<int64_t>> Delays(const BenchConfig& c, int64_t,
                                                  uint64_t seed) {
    return RandomDelays(c.lateness_n, 1, Ms(c.lateness_min_ms),
                        Ms(c.lateness_max_ms), seed);
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t slack0, uint64_t seed) {
    RepOutput out;
    const auto delays = Delays(c, slack0, seed)[0];
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

// What a burst measures with: every task counts its run, and one run in
// kBurstSampleEvery, by the order in which they run, also reads the clock
// (the first and the last run always do). A clock read per run would cost
// each timer as much as its own expiry path (a vDSO read is ~25 ns on a VM)
// and add a million to the time from the deadline to the last run; the
// sample keeps the quantiles (runs come in deadline order, so lateness
// rises with the ordinal) and the last run's time exact.
struct BurstTimes {
  static constexpr int64_t kBurstSampleEvery = 16;
  explicit BurstTimes(int64_t n)
      : deadline(static_cast<size_t>(n), 0),
        ran_at(static_cast<size_t>(n / kBurstSampleEvery + 2), 0),
        of(ran_at.size(), 0),
        total(n) {}
  std::vector<int64_t> deadline;  // by task index, written before scheduling
  std::vector<int64_t> ran_at;    // by sample: run time
  std::vector<size_t> of;         // by sample: the task index it timed
  int64_t total;
  std::atomic<int64_t> ordinal{0};  // runs started
  std::atomic<int64_t> done{0};     // runs finished (samples written)
};

struct SampledRecordTask {
  BurstTimes* times;
  size_t index;
  void operator()() const {
    const int64_t k = times->ordinal.fetch_add(1, std::memory_order_relaxed);
    const bool last = k == times->total - 1;
    if (k % BurstTimes::kBurstSampleEvery == 0 || last) {
      const size_t slot =
          last ? times->ran_at.size() - 1
               : static_cast<size_t>(k / BurstTimes::kBurstSampleEvery);
      times->ran_at[slot] = NowNanos();
      times->of[slot] = index;
    }
    times->done.fetch_add(1, std::memory_order_release);
  }
};
static_assert(sizeof(SampledRecordTask) == 16);

// burst: N timeouts scheduled back to back from one thread, in two runs.
// "same deadline": every call asks for the instant --burst_lead_ms after the
// first call, so all fall due at once after the last call, and the lateness
// max is the time from it to the last run. "same delay": every call asks for
// --burst_delay_ms, so the first fall due while later ones are still being
// scheduled (where a per-tick cap on filing, as Netty's, would make them
// late). tickwheel at --tick_ms. Reports lateness p99 (of the sampled runs,
// BurstTimes) and max (the latest sampled run: for the same deadline, the
// last run), and beside them the floor under max: the same tasks run alone
// (TaskFloorMs()); a sampled run that is early fails the run.
struct Burst {
  static constexpr const char* kName = "burst";
  static constexpr const char* kWhat =
      "N timeouts due at one instant, or after one delay each";
  static constexpr Metric kMetrics[] = {
      {"p99_ms", "lateness p99", "ms", Better::kLower, 1},
      {"max_ms", "lateness max", "ms", Better::kLower, 1},
      {"task_floor_ms", "the same tasks alone, back to back", "ms",
       Better::kLower, 1},
  };
  static std::vector<Variant> Variants(const BenchConfig&) {
    return {{"same_deadline", "same deadline", 0},
            {"same_delay", "same delay", 1}};
  }

  // What the burst's tasks cost with no timer at all: N of them on fresh
  // BurstTimes, called back to back on this thread. No timer's last run can
  // come sooner after the deadline than this (its thread runs the same
  // tasks, one after another); the rest of "lateness max" is the timer's.
  static double TaskFloorMs(int64_t n) {
    BurstTimes alone(n);
    const int64_t start = NowNanos();
    for (int64_t i = 0; i < n; ++i) {
      SampledRecordTask{&alone, static_cast<size_t>(i)}();
    }
    return static_cast<double>(NowNanos() - start) / 1e6;
  }

  template <BenchTimer T>
  static RepOutput Run(const BenchConfig& c, int64_t same_delay, uint64_t) {
    RepOutput out;
    BurstTimes times(c.n);
    T timer(TickOptions(c));
    const int64_t deadline = NowNanos() + Ms(c.burst_lead_ms).count();
    const int64_t delay = Ms(c.burst_delay_ms).count();
    for (size_t i = 0; i < times.deadline.size(); ++i) {
      const int64_t now = NowNanos();
      const int64_t d =
          std::max<int64_t>(0, same_delay ? delay : deadline - now);
      times.deadline[i] = now + d;
      timer.Schedule(SampledRecordTask{&times, i}, std::chrono::nanoseconds(d));
    }
    AwaitRuns(timer, times.done, c.n,
              *std::max_element(times.deadline.begin(), times.deadline.end()),
              out);
    if (!same_delay && times.deadline.back() > deadline) {
      out.notes.push_back("scheduling overran the deadline");
    }
    std::vector<double> late;
    int64_t early = 0;
    for (size_t s = 0; s < times.ran_at.size(); ++s) {
      if (times.ran_at[s] == 0) continue;  // no run took this sample
      const int64_t l = times.ran_at[s] - times.deadline[times.of[s]];
      early += l < 0;
      late.push_back(static_cast<double>(l) / 1e6);
    }
    if (early > 0) out.failures.push_back(fmt::format("{} ran early", early));
    std::sort(late.begin(), late.end());
    out.values["p99_ms"] = Quantile(late, 0.99);
    out.values["max_ms"] = late.empty() ? 0 : late.back();
    out.values["task_floor_ms"] = TaskFloorMs(c.n);
    return out;
  }
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_LATENESS_H_
