// tools/bench/workloads_throughput.h
// -----------------------------------------------------------------------------
// The API-cost and memory workloads of issues #3 and #6, as templates over a
// BenchTimer model (bench_timer.h). Each function is one repetition on a
// fresh timer and returns its RepOutput (workload_common.h); the metric keys
// are those of results.h.
//
// W1 schedule     P producer threads schedule N timeouts in total, delays
//                 uniform in [far_min_s, far_max_s]; the handles are dropped
//                 at once (fire-and-forget). Metrics: mean wall time of one
//                 Schedule() as seen by its caller, and the caller's mean CPU
//                 time per call (RunProducers); and the aggregate
//                 throughput, N / elapsed wall time of the whole producer
//                 phase (first thread in to last thread out), whose ratio
//                 P=2 / P=1 (derived, results.h) says how producers scale.
//                 And the CPU time of every other thread of the process
//                 (the timer's own: its worker, the kernel's page faults on
//                 it) per call, from the producers' start until the process
//                 is idle again (WaitUntilIdle; its last 10 ms window adds
//                 at most 1 ns per call). With 3 threads on 2 cores kept
//                 busy, P=2 / P=1 is 2 p1 / (p2 + w2): p1 the wall time of
//                 one call with one producer, p2 the producers' CPU per call
//                 and w2 this row with two (target 7).
//                 Then Stop() must return all N unprocessed and no task may
//                 have run.
// W2 schedule+    each producer cancels every timeout right after scheduling
//    cancel       it (the request-timeout pattern). Metric: ns per pair.
//                 Three ticks later: pending (must be 0 where the model's
//                 count is exact), RSS still held (after malloc_trim), and
//                 the RSS peak during the run (VmHWM, reset before the run).
// W4 memory       N timeouts scheduled from one thread and left pending;
//                 (RSS after - RSS before) / N, both sides after malloc_trim,
//                 once the model reports all N armed. The 16-byte task is
//                 included; the handles are dropped.
// W7 schedule     one run per depth D (w7_depths, default 1,000 and
//    with D       1,000,000): D timeouts scheduled untimed from one thread
//    pending      (delays uniform in [far_min_s, far_max_s], handles
//                 dropped); wait until the model reports Pending() >= D and
//                 then until the process is idle (WaitUntilIdle: tickwheel's
//                 worker files the D into the wheel after Pending() already
//                 counts them, and timing on top of that backlog would
//                 measure the two threads' contention, not the depth), then
//                 3 ms; then one producer schedules M (w7_m) more, timed as
//                 in W1 (wall and caller CPU per call). The ratio deepest D /
//                 shallowest D is derived per repetition (results.h). Stop()
//                 must return D + M and no task may have run.
//
// What "ns per call" includes: the producer side only. tickwheel and Asio
// hand the rest of the work (inserting into the wheel, arming the timer) to
// their own thread, which competes with the producers for the 2 cores; the
// heap model does its insertion inside the call, under its mutex.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_THROUGHPUT_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_THROUGHPUT_H_

#include <algorithm>

#include <fmt/format.h>

#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"
#include "tools/bench/results.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

inline BenchTimerOptions WheelOptions(const BenchConfig& c, double tick_ms) {
  BenchTimerOptions o;
  o.tick = Ms(tick_ms);
  o.ticks_per_wheel = c.ticks_per_wheel;
  return o;
}

template <BenchTimer T>
RepOutput RunW1(const BenchConfig& c, int producers, uint64_t seed) {
  RepOutput out;
  const auto delays = RandomDelays(c.w1_n, producers, Ms(c.far_min_s * 1e3).count(),
                                   Ms(c.far_max_s * 1e3).count(), seed);
  std::atomic<int64_t> runs{0};
  T timer(WheelOptions(c, c.tick_ms));
  const double cpu0 = ProcessCpuSeconds();
  const ProducerTimes t = RunProducers(producers, [&](int p) {
    int64_t i = 0;
    for (int64_t d : delays[static_cast<size_t>(p)]) {
      timer.Schedule(CountingTask{&runs, i++}, std::chrono::nanoseconds(d));
    }
  });
  // The rest of the process's CPU until the timer's threads have finished
  // the backlog the producers left them (a worker that shares the cores
  // with two producers lags behind them).
  if (WaitUntilIdle(10'000'000, 0.1, 60'000'000'000) < 0) {
    out.notes.push_back("the timer's threads were still busy after 60 s");
  }
  const double others_ns =
      (ProcessCpuSeconds() - cpu0) * 1e9 - static_cast<double>(t.cpu_ns);
  out.values[KeyW1OthersCpuNsPerOp(producers)] =
      others_ns / static_cast<double>(c.w1_n);
  out.values[KeyW1NsPerOp(producers)] =
      static_cast<double>(t.wall_ns) / static_cast<double>(c.w1_n);
  out.values[KeyW1CpuNsPerOp(producers)] =
      static_cast<double>(t.cpu_ns) / static_cast<double>(c.w1_n);
  out.values[KeyW1Throughput(producers)] =
      static_cast<double>(c.w1_n) / static_cast<double>(std::max<int64_t>(1, t.span_ns)) *
      1e3;  // per ns -> M per s
  const int64_t unprocessed = timer.Stop();
  out.values[KeyW1Unprocessed(producers)] = static_cast<double>(unprocessed);
  out.counters = timer.Counters();
  if (unprocessed != c.w1_n) {
    out.failures.push_back(fmt::format(
        "stop returned {} unprocessed timeouts, expected {}", unprocessed, c.w1_n));
  }
  if (runs.load() != 0) {
    out.failures.push_back(fmt::format("{} tasks ran early", runs.load()));
  }
  return out;
}

template <BenchTimer T>
RepOutput RunW2(const BenchConfig& c, int producers, uint64_t seed) {
  RepOutput out;
  const auto delays = RandomDelays(c.w2_n, producers, Ms(c.far_min_s * 1e3).count(),
                                   Ms(c.far_max_s * 1e3).count(), seed);
  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> cancelled{0};
  TrimMalloc();
  const int64_t rss0 = ResidentBytes();
  const bool peak_reset = ResetPeakResident();
  {
    T timer(WheelOptions(c, c.tick_ms));
    const ProducerTimes t = RunProducers(producers, [&](int p) {
      int64_t i = 0, ok = 0;
      for (int64_t d : delays[static_cast<size_t>(p)]) {
        typename T::Handle h =
            timer.Schedule(CountingTask{&runs, i++}, std::chrono::nanoseconds(d));
        ok += timer.Cancel(h) ? 1 : 0;
      }
      cancelled.fetch_add(ok);
    });
    out.values[KeyW2NsPerPair(producers)] =
        static_cast<double>(t.wall_ns) / static_cast<double>(c.w2_n);
    out.values[KeyW2CpuNsPerPair(producers)] =
        static_cast<double>(t.cpu_ns) / static_cast<double>(c.w2_n);
    SleepNanos(3 * Ms(c.tick_ms).count());
    const int64_t pending = timer.Pending();
    out.values[KeyW2Pending(producers)] = static_cast<double>(pending);
    if (peak_reset) {
      out.values[KeyW2RssPeak(producers)] =
          static_cast<double>(PeakResidentBytes() - rss0) / 1e6;
    }
    TrimMalloc();
    out.values[KeyW2RssHeld(producers)] =
        static_cast<double>(ResidentBytes() - rss0) / 1e6;
    const int64_t unprocessed = timer.Stop();
    out.counters = timer.Counters();
    if (T::kExactPending) {
      if (pending != 0) {
        out.failures.push_back(
            fmt::format("pending is {} three ticks after cancelling all", pending));
      }
      if (cancelled.load() != c.w2_n) {
        out.failures.push_back(fmt::format("{} of {} cancels succeeded",
                                           cancelled.load(), c.w2_n));
      }
    }
    if (unprocessed != 0) {
      out.failures.push_back(
          fmt::format("stop returned {} unprocessed, expected 0", unprocessed));
    }
  }
  if (runs.load() != 0) {
    out.failures.push_back(fmt::format("{} cancelled tasks ran", runs.load()));
  }
  return out;
}

template <BenchTimer T>
RepOutput RunW4(const BenchConfig& c, uint64_t seed) {
  RepOutput out;
  const auto delays = RandomDelays(c.w4_n, 1, Ms(c.far_min_s * 1e3).count(),
                                   Ms(c.far_max_s * 1e3).count(), seed);
  std::atomic<int64_t> runs{0};
  TrimMalloc();
  const int64_t rss0 = ResidentBytes();
  T timer(WheelOptions(c, c.tick_ms));
  int64_t i = 0;
  for (int64_t d : delays[0]) {
    timer.Schedule(CountingTask{&runs, i++}, std::chrono::nanoseconds(d));
  }
  // Asio arms on its own thread: wait until every timer exists, then until
  // the process is idle, so that tickwheel's worker has moved every node
  // from its queues into the wheel's bucket arrays (Pending() counts queued
  // nodes too; two ticks were not enough for a million), then two ticks.
  if (!WaitFor([&] { return timer.Pending() >= c.w4_n; }, 120'000'000'000)) {
    out.failures.push_back(fmt::format("only {} of {} armed after 120 s",
                                       timer.Pending(), c.w4_n));
  }
  if (WaitUntilIdle(10'000'000, 0.1, 60'000'000'000) < 0) {
    out.notes.push_back("process still busy 60 s after scheduling");
  }
  SleepNanos(2 * Ms(c.tick_ms).count());
  TrimMalloc();
  const int64_t rss1 = ResidentBytes();
  out.values[kKeyW4Bytes] =
      static_cast<double>(rss1 - rss0) / static_cast<double>(c.w4_n);
  const int64_t unprocessed = timer.Stop();
  out.counters = timer.Counters();
  if (unprocessed != c.w4_n) {
    out.failures.push_back(fmt::format(
        "stop returned {} unprocessed timeouts, expected {}", unprocessed, c.w4_n));
  }
  return out;
}

template <BenchTimer T>
RepOutput RunW7(const BenchConfig& c, int depth, uint64_t seed) {
  RepOutput out;
  const int64_t d = depth, m = c.w7_m;
  const auto delays = RandomDelays(d + m, 1, Ms(c.far_min_s * 1e3).count(),
                                   Ms(c.far_max_s * 1e3).count(), seed)[0];
  std::atomic<int64_t> runs{0};
  T timer(WheelOptions(c, c.tick_ms));
  for (int64_t i = 0; i < d; ++i) {
    timer.Schedule(CountingTask{&runs, i},
                   std::chrono::nanoseconds(delays[static_cast<size_t>(i)]));
  }
  if (!WaitFor([&] { return timer.Pending() >= d; }, 120'000'000'000)) {
    out.failures.push_back(
        fmt::format("only {} of {} armed after 120 s", timer.Pending(), d));
  }
  const int64_t settled = WaitUntilIdle(10'000'000, 0.1, 60'000'000'000);
  if (settled < 0) out.notes.push_back("process still busy 60 s after the prefill");
  SleepNanos(3'000'000);
  const ProducerTimes t = RunProducers(1, [&](int) {
    for (int64_t i = d; i < d + m; ++i) {
      timer.Schedule(CountingTask{&runs, i},
                     std::chrono::nanoseconds(delays[static_cast<size_t>(i)]));
    }
  });
  out.values[KeyW7NsPerOp(depth)] =
      static_cast<double>(t.wall_ns) / static_cast<double>(m);
  out.values[KeyW7CpuNsPerOp(depth)] =
      static_cast<double>(t.cpu_ns) / static_cast<double>(m);
  const int64_t unprocessed = timer.Stop();
  out.values[KeyW7Unprocessed(depth)] = static_cast<double>(unprocessed);
  out.counters = timer.Counters();
  out.counters["bench_settle_ms"] = static_cast<double>(settled) / 1e6;
  if (unprocessed != d + m) {
    out.failures.push_back(fmt::format(
        "stop returned {} unprocessed timeouts, expected {}", unprocessed, d + m));
  }
  if (runs.load() != 0) {
    out.failures.push_back(fmt::format("{} tasks ran early", runs.load()));
  }
  return out;
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_THROUGHPUT_H_
