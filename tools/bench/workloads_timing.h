// tools/bench/workloads_timing.h
// -----------------------------------------------------------------------------
// The timing workloads of issues #3 and #6, as templates over a BenchTimer
// model (bench_timer.h); one repetition per call, on a fresh timer.
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
// W8 burst        N (w8_n) timeouts scheduled back to back from one thread,
//    accuracy     tick w8_tick_ms; each task stores its run time; lateness is
//                 measured as in W3 (against the time read just before
//                 Schedule() + delay). Two variants, each its own run:
//                 "same deadline": every call's delay is (t0 + w8_lead_ms) -
//                 now, so all N are due at one instant, well after the last
//                 Schedule(); metrics: last run - that deadline (ms), p99
//                 lateness (ms). "same deadline, counted": the same burst
//                 with CountTask, which reads the clock only as the first,
//                 the p99 and the last task to run, so that its figure is
//                 the timer's own (see CountTask). "same delay": every call
//                 uses w8_delay_ms,
//                 so the deadlines spread over the scheduling time and the
//                 first fall due while later ones are still being scheduled
//                 (where a per-tick cap on moving new timeouts into the wheel,
//                 as Netty's 100,000, makes them late); metrics: max and p99
//                 lateness (ms). Both: early fires (must be 0), every task
//                 must run, and how long scheduling took.
// W9 idle with    N (w9_n) timeouts with delays uniform in [far_min_s,
//    N pending    far_max_s], tick w9_tick_ms. Once the model reports all N
//                 armed, w9_settle_s of settling, then CPU time of the whole
//                 process (as % of one core) and the model's wake-ups per
//                 second over w9_idle_s, cut short so that the window ends
//                 500 ms before the earliest possible deadline (t0 +
//                 far_min_s). No task may run; Stop() must return all N.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

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

// W8's counted burst. Every task shares one deadline, and every model runs
// its tasks one at a time on one thread, so run times rise with run order:
// the k-th task to run has the k-th smallest lateness. The task counts its
// run with the same atomic add as RecordTask and reads the clock only as the
// first, the p99_rank-th (nearest rank) and the n-th to run. RecordTask's
// clock read and store cost ~25 ns per task here, ~25 ms per million: more
// than target 5's 10 ms before the timer does anything. The first and the
// last run record their thread, to check the one-thread premise.
struct CountRecord {
  int64_t n = 0;
  int64_t p99_rank = 0;
  std::atomic<int64_t> done{0};
  int64_t first_at = 0, p99_at = 0, last_at = 0;
  std::thread::id first_thread, last_thread;
};

struct CountTask {
  CountRecord* record;
  void operator()() const {
    const int64_t k = record->done.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (k == 1) [[unlikely]] {
      record->first_at = NowNanos();
      record->first_thread = std::this_thread::get_id();
    }
    if (k == record->p99_rank) [[unlikely]] record->p99_at = NowNanos();
    if (k == record->n) [[unlikely]] {
      record->last_at = NowNanos();
      record->last_thread = std::this_thread::get_id();
    }
  }
};

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

// W8's three variants (the `variant` of runners.h).
inline constexpr int kW8SameDeadline = 1;
inline constexpr int kW8SameDeadlineCounted = 2;
inline constexpr int kW8SameDelay = 3;

// W8 "same deadline, counted": the burst of RunW8's same deadline with
// CountTask.
template <BenchTimer T>
RepOutput RunW8Counted(const BenchConfig& c) {
  RepOutput out;
  const int64_t n = c.w8_n;
  CountRecord record;
  record.n = n;
  record.p99_rank = std::max<int64_t>(1, (99 * n + 99) / 100);  // ceil(0.99 n)
  T timer(WheelOptions(c, c.w8_tick_ms));
  const int64_t t0 = NowNanos();
  const int64_t deadline = t0 + Ms(c.w8_lead_ms).count();
  int64_t overran = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = deadline - NowNanos();
    if (d <= 0) {
      ++overran;
      d = 0;
    }
    timer.Schedule(CountTask{&record}, std::chrono::nanoseconds(d));
  }
  const int64_t scheduled = NowNanos();
  if (overran > 0) {
    out.notes.push_back(fmt::format(
        "same deadline, counted: {} calls came after the deadline; raise --w8_lead_ms",
        overran));
  }
  const bool all = WaitFor(
      [&] { return record.done.load(std::memory_order_acquire) >= n; },
      std::max<int64_t>(0, deadline - NowNanos()) + 60'000'000'000);
  timer.Stop();  // joins the thread: the record is ours from here on
  out.counters = timer.Counters();
  const int64_t done = record.done.load(std::memory_order_acquire);
  if (!all) out.failures.push_back(fmt::format("only {} of {} ran", done, n));
  if (all && record.first_thread != record.last_thread) {
    out.failures.push_back("the first and the last task ran on different threads");
  }
  if (done >= 1 && record.first_at < deadline) {
    out.failures.push_back("the first task ran before the deadline");
  }
  if (all) {
    out.values[kKeyW8CountedLast] = static_cast<double>(record.last_at - deadline) / 1e6;
    out.values[kKeyW8CountedP99] = static_cast<double>(record.p99_at - deadline) / 1e6;
  }
  out.values[kKeyW8CountedSchedule] = static_cast<double>(scheduled - t0) / 1e6;
  return out;
}

template <BenchTimer T>
RepOutput RunW8(const BenchConfig& c, int variant) {
  if (variant == kW8SameDeadlineCounted) return RunW8Counted<T>(c);
  RepOutput out;
  const bool same_deadline = variant == kW8SameDeadline;
  const int64_t n = c.w8_n;
  std::vector<int64_t> expected(static_cast<size_t>(n));
  W3Record record;
  record.ran_at.assign(static_cast<size_t>(n), 0);
  T timer(WheelOptions(c, c.w8_tick_ms));
  const int64_t t0 = NowNanos();
  const int64_t deadline = t0 + Ms(c.w8_lead_ms).count();
  const int64_t fixed_delay = Ms(c.w8_delay_ms).count();
  int64_t overran = 0;  // same deadline: calls made at or after the deadline
  for (int64_t i = 0; i < n; ++i) {
    const int64_t now = NowNanos();
    int64_t d = fixed_delay;
    if (same_deadline) {
      d = deadline - now;
      if (d <= 0) {
        ++overran;
        d = 0;
      }
    }
    expected[static_cast<size_t>(i)] = now + d;
    timer.Schedule(RecordTask{&record, i}, std::chrono::nanoseconds(d));
  }
  const int64_t scheduled = NowNanos();
  if (overran > 0) {
    out.notes.push_back(fmt::format(
        "same deadline: {} calls came after the deadline; raise --w8_lead_ms", overran));
  }
  const int64_t last_expected = *std::max_element(expected.begin(), expected.end());
  const bool all = WaitFor(
      [&] { return record.done.load(std::memory_order_acquire) >= n; },
      std::max<int64_t>(0, last_expected - NowNanos()) + 60'000'000'000);
  timer.Stop();  // joins the thread: ran_at is ours from here on
  out.counters = timer.Counters();
  const int64_t done = record.done.load(std::memory_order_acquire);
  if (!all) out.failures.push_back(fmt::format("only {} of {} ran", done, n));
  int64_t early = 0, last_run = 0;
  std::vector<double> late_ms;
  late_ms.reserve(static_cast<size_t>(n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (record.ran_at[i] == 0) continue;  // never ran
    const int64_t late = record.ran_at[i] - expected[i];
    if (late < 0) ++early;
    last_run = std::max(last_run, record.ran_at[i]);
    late_ms.push_back(static_cast<double>(late) / 1e6);
  }
  std::sort(late_ms.begin(), late_ms.end());
  const double schedule_ms = static_cast<double>(scheduled - t0) / 1e6;
  if (same_deadline) {
    out.values[kKeyW8DeadlineLast] =
        last_run == 0 ? 0 : static_cast<double>(last_run - deadline) / 1e6;
    out.values[kKeyW8DeadlineP99] = Quantile(late_ms, 0.99);
    out.values[kKeyW8DeadlineEarly] = static_cast<double>(early);
    out.values[kKeyW8DeadlineSchedule] = schedule_ms;
  } else {
    out.values[kKeyW8DelayMax] = late_ms.empty() ? 0 : late_ms.back();
    out.values[kKeyW8DelayP99] = Quantile(late_ms, 0.99);
    out.values[kKeyW8DelayEarly] = static_cast<double>(early);
    out.values[kKeyW8DelaySchedule] = schedule_ms;
  }
  if (early != 0) out.failures.push_back(fmt::format("{} early fires", early));
  return out;
}

template <BenchTimer T>
RepOutput RunW9(const BenchConfig& c, uint64_t seed) {
  RepOutput out;
  const int64_t n = c.w9_n;
  const int64_t min_delay = Ms(c.far_min_s * 1e3).count();
  const auto delays = RandomDelays(n, 1, min_delay, Ms(c.far_max_s * 1e3).count(),
                                   seed)[0];
  std::atomic<int64_t> runs{0};
  T timer(WheelOptions(c, c.w9_tick_ms));
  const int64_t t0 = NowNanos();
  int64_t i = 0;
  for (int64_t d : delays) {
    timer.Schedule(CountingTask{&runs, i++}, std::chrono::nanoseconds(d));
  }
  if (!WaitFor([&] { return timer.Pending() >= n; }, 120'000'000'000)) {
    out.failures.push_back(
        fmt::format("only {} of {} armed after 120 s", timer.Pending(), n));
  }
  SleepNanos(static_cast<int64_t>(c.w9_settle_s * 1e9));
  // The window ends 500 ms before the earliest deadline any model can have.
  const int64_t window_end_limit = t0 + min_delay - 500'000'000;
  const int64_t wanted = static_cast<int64_t>(c.w9_idle_s * 1e9);
  const int64_t window = std::min(wanted, window_end_limit - NowNanos());
  if (window <= 0) {
    out.failures.push_back(
        "no idle window left before the earliest deadline; raise --far_min_s or "
        "lower --w9_settle_s");
    timer.Stop();
    return out;
  }
  if (window < wanted) {
    out.notes.push_back(fmt::format(
        "idle window cut to {:.2f} s to end before the earliest deadline",
        static_cast<double>(window) / 1e9));
  }
  const double cpu0 = ProcessCpuSeconds();
  const int64_t wake0 = timer.Wakeups();
  const int64_t w0 = NowNanos();
  SleepNanos(window);
  const double cpu1 = ProcessCpuSeconds();
  const int64_t wake1 = timer.Wakeups();
  const double seconds = static_cast<double>(NowNanos() - w0) / 1e9;
  out.values[kKeyW9CpuPercent] = (cpu1 - cpu0) / seconds * 100;
  out.values[kKeyW9Wakeups] = static_cast<double>(wake1 - wake0) / seconds;
  out.values[kKeyW9Window] = seconds;
  out.counters = timer.Counters();
  const int64_t unprocessed = timer.Stop();
  if (unprocessed != n) {
    out.failures.push_back(
        fmt::format("stop returned {} unprocessed, expected {}", unprocessed, n));
  }
  if (runs.load() != 0) {
    out.failures.push_back(fmt::format("{} tasks ran early", runs.load()));
  }
  return out;
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_TIMING_H_
