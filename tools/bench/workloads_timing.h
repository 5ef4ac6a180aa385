// tools/bench/workloads_timing.h
// -----------------------------------------------------------------------------
// The timing workloads of issue #3, as templates over a BenchTimer model
// (bench_timer.h); one repetition per call, on a fresh timer.
//
// W3 accuracy     K timeouts, delays uniform in [w3_min_ms, w3_max_ms], tick
//                 w3_tick_ms, scheduled back to back from one thread. Each
//                 task stores its run time. lateness = run time - (time read
//                 just before Schedule() + delay), so a model that reads its
//                 own clock later can only look later, never earlier. p50,
//                 p99 (nearest rank), max in µs, and early fires (lateness
//                 < 0; must be 0).
// W5 idle         one timeout an hour away, tick w5_tick_ms; after 200 ms of
//                 settling, CPU time of the whole process (the main thread
//                 sleeps) and the model's wake-ups per second over w5_idle_s.
// W6 mass expiry  N timeouts whose deadlines are uniform in one window of
//                 w6_window_ms starting w6_lead_ms after the first Schedule()
//                 (each delay computed from the clock at its call), tick
//                 w6_tick_ms. Two rates: per wall second, N / (last run -
//                 first run), which the offered rate N / window caps (10 M/s
//                 by default) and which a loaded machine deflates; and per
//                 second of the worker thread's CPU time between the first
//                 and the last run (CLOCK_THREAD_CPUTIME_ID, read by those two
//                 tasks on the worker), the worker's capacity, which neither
//                 caps nor preemption distorts. Plus the time from the last
//                 deadline to the last run.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"
#include "tools/bench/results.h"
#include "tools/bench/workload_common.h"
#include "tools/bench/workloads_throughput.h"

namespace tickwheel::bench {

// W3: where the tasks write their run times. Written by the model's thread,
// read by the main thread after Stop() has joined it.
struct W3Record {
  std::vector<int64_t> ran_at;
  std::atomic<int64_t> done{0};
};

struct RecordTask {
  W3Record* record;
  int64_t index;
  void operator()() const {
    record->ran_at[static_cast<size_t>(index)] = NowNanos();
    record->done.fetch_add(1, std::memory_order_release);
  }
};
static_assert(sizeof(RecordTask) == 16);

template <BenchTimer T>
RepOutput RunW3(const BenchConfig& c, uint64_t seed) {
  RepOutput out;
  const int64_t k = c.w3_k;
  const auto delays = RandomDelays(k, 1, Ms(c.w3_min_ms).count(),
                                   Ms(c.w3_max_ms).count(), seed)[0];
  std::vector<int64_t> expected(static_cast<size_t>(k));
  W3Record record;
  record.ran_at.assign(static_cast<size_t>(k), 0);
  T timer(WheelOptions(c, c.w3_tick_ms));
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = delays[static_cast<size_t>(i)];
    expected[static_cast<size_t>(i)] = NowNanos() + d;
    timer.Schedule(RecordTask{&record, i}, std::chrono::nanoseconds(d));
  }
  const bool all = WaitFor(
      [&] { return record.done.load(std::memory_order_acquire) >= k; },
      Ms(c.w3_max_ms).count() + 30'000'000'000);
  timer.Stop();  // joins the thread: ran_at is ours from here on
  out.counters = timer.Counters();
  const int64_t done = record.done.load(std::memory_order_acquire);
  if (!all) out.failures.push_back(fmt::format("only {} of {} ran", done, k));
  int64_t early = 0;
  out.lateness_us.reserve(static_cast<size_t>(k));
  for (size_t i = 0; i < static_cast<size_t>(k); ++i) {
    if (record.ran_at[i] == 0) continue;  // never ran
    const int64_t late = record.ran_at[i] - expected[i];
    if (late < 0) ++early;
    out.lateness_us.push_back(static_cast<double>(late) / 1e3);
  }
  std::vector<double> sorted = out.lateness_us;
  std::sort(sorted.begin(), sorted.end());
  out.values[kKeyW3P50] = Quantile(sorted, 0.50);
  out.values[kKeyW3P99] = Quantile(sorted, 0.99);
  out.values[kKeyW3Max] = sorted.empty() ? 0 : sorted.back();
  out.values[kKeyW3Early] = static_cast<double>(early);
  if (early != 0) out.failures.push_back(fmt::format("{} early fires", early));
  return out;
}

template <BenchTimer T>
RepOutput RunW5(const BenchConfig& c) {
  RepOutput out;
  std::atomic<int64_t> runs{0};
  T timer(WheelOptions(c, c.w5_tick_ms));
  {
    typename T::Handle far = timer.Schedule(CountingTask{&runs, 0},
                                            std::chrono::hours(1));
  }
  SleepNanos(200'000'000);  // thread started, timer armed
  const double cpu0 = ProcessCpuSeconds();
  const int64_t wake0 = timer.Wakeups();
  const int64_t t0 = NowNanos();
  SleepNanos(static_cast<int64_t>(c.w5_idle_s * 1e9));
  const double cpu1 = ProcessCpuSeconds();
  const int64_t wake1 = timer.Wakeups();
  const double seconds = static_cast<double>(NowNanos() - t0) / 1e9;
  out.values[kKeyW5Cpu] = cpu1 - cpu0;
  out.values[kKeyW5Wakeups] = static_cast<double>(wake1 - wake0) / seconds;
  out.counters = timer.Counters();
  const int64_t unprocessed = timer.Stop();
  if (unprocessed != 1) {
    out.failures.push_back(
        fmt::format("stop returned {} unprocessed, expected 1", unprocessed));
  }
  return out;
}

// W6: counts runs; the first and the last run record the time. Every task
// runs on the model's one thread, so the fields have a single writer.
struct W6Record {
  int64_t n = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  int64_t first_cpu_ns = 0;  // the worker's thread CPU time at the first run
  int64_t last_cpu_ns = 0;   // ... and at the last
  std::atomic<int64_t> done{0};
};

struct HitTask {
  W6Record* record;
  int64_t index;
  void operator()() const {
    const int64_t count = record->done.load(std::memory_order_relaxed) + 1;
    if (count == 1) {
      record->first_ns = NowNanos();
      record->first_cpu_ns = ThreadCpuNanos();
    }
    if (count == record->n) {
      record->last_ns = NowNanos();
      record->last_cpu_ns = ThreadCpuNanos();
    }
    record->done.store(count, std::memory_order_release);
  }
};
static_assert(sizeof(HitTask) == 16);

template <BenchTimer T>
RepOutput RunW6(const BenchConfig& c, uint64_t seed) {
  RepOutput out;
  const int64_t n = c.w6_n;
  const int64_t window = Ms(c.w6_window_ms).count();
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> dist(0, window - 1);
    for (int64_t& o : offsets) o = dist(rng);
  }
  const int64_t last_offset = *std::max_element(offsets.begin(), offsets.end());
  W6Record record;
  record.n = n;
  T timer(WheelOptions(c, c.w6_tick_ms));
  const int64_t window_start = NowNanos() + Ms(c.w6_lead_ms).count();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t delay = window_start + offsets[static_cast<size_t>(i)] - NowNanos();
    timer.Schedule(HitTask{&record, i}, std::chrono::nanoseconds(delay));
  }
  if (NowNanos() > window_start) {
    out.notes.push_back("scheduling overran the lead; raise --w6_lead_ms");
  }
  const bool all = WaitFor(
      [&] { return record.done.load(std::memory_order_acquire) >= n; },
      window_start - NowNanos() + window + 60'000'000'000);
  timer.Stop();
  out.counters = timer.Counters();
  if (!all) {
    out.failures.push_back(fmt::format("only {} of {} ran",
                                       record.done.load(), n));
    return out;
  }
  const double span = static_cast<double>(std::max<int64_t>(
      1, record.last_ns - record.first_ns));
  out.values[kKeyW6Rate] = static_cast<double>(n) / span * 1e9 / 1e6;
  const double cpu = static_cast<double>(std::max<int64_t>(
      1, record.last_cpu_ns - record.first_cpu_ns));
  out.values[kKeyW6CpuRate] = static_cast<double>(n) / cpu * 1e9 / 1e6;
  out.values[kKeyW6LastDelay] =
      static_cast<double>(record.last_ns - (window_start + last_offset)) / 1e6;
  return out;
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_
