// tools/bench/workload_common.h
// -----------------------------------------------------------------------------
// What the workloads (workloads_throughput.h, workloads_timing.h) share: the
// result of one run, the 16-byte tasks they schedule, random delays, the
// helper that starts producer threads together and times them, and two
// waits.
//
// Every task captures exactly 16 bytes (a pointer and an integer), the size
// issue #3 fixes for W4, so that in every workload all three models store the
// task inline in their type-erased holder (absl::AnyInvocable for tickwheel,
// std::function for the other two) and nobody pays an extra allocation.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

// One run (one repetition) of one workload on one implementation.
struct RepOutput {
  std::map<std::string, double> values;  // metric key (results.h) -> value
  std::vector<std::string> failures;     // correctness checks that failed
  std::vector<double> lateness_us;       // W3 only: every sample
  CounterMap counters;                   // the model's Counters() at the end
  std::vector<std::string> notes;        // e.g. W6 scheduling overran the lead
};

// Counts its runs; a second field brings the capture to 16 bytes.
struct CountingTask {
  std::atomic<int64_t>* runs;
  int64_t payload;
  void operator()() const { runs->fetch_add(1, std::memory_order_relaxed); }
};
static_assert(sizeof(CountingTask) == 16);

inline std::chrono::nanoseconds Ms(double ms) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
}

inline void SleepNanos(int64_t ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

// `n` delays in nanoseconds, uniform in [min_ns, max_ns], split round-robin
// into `parts` vectors (one per producer).
inline std::vector<std::vector<int64_t>> RandomDelays(int64_t n, int parts,
                                                      int64_t min_ns,
                                                      int64_t max_ns,
                                                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(min_ns, max_ns);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(parts));
  for (auto& v : out) v.reserve(static_cast<size_t>(n / parts + 1));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i % parts)].push_back(dist(rng));
  return out;
}

// What RunProducers measured.
struct ProducerTimes {
  int64_t wall_ns = 0;  // each thread's wall time inside body, summed
  int64_t cpu_ns = 0;   // each thread's CPU time inside body, summed
  // Elapsed wall time of the whole phase: from the earliest moment a thread
  // entered body to the latest moment one left it. Operations / span_ns is
  // the aggregate throughput of all producers together.
  int64_t span_ns = 0;
};

// Starts `producers` threads, releases them together, runs body(p) on thread
// p and sums, over the threads, the wall time and the CPU time each spent in
// body. Divided by the operation count, wall_ns is the mean cost of one call
// as its caller sees it (preemption and blocking on a lock included), cpu_ns
// the mean CPU the caller spent (neither included). With P threads these
// are per-call costs, not throughput: P threads each taking T for N/P calls
// give wall_ns = P*T, i.e. T/(N/P) per call. Throughput is N / span_ns.
template <typename Body>
ProducerTimes RunProducers(int producers, Body&& body) {
  struct Times {
    int64_t start_ns, end_ns, cpu_ns;
  };
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<Times> times(static_cast<size_t>(producers));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(producers));
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const int64_t t0 = NowNanos();
      const int64_t c0 = ThreadCpuNanos();
      body(p);
      const int64_t c1 = ThreadCpuNanos();
      times[static_cast<size_t>(p)] = {t0, NowNanos(), c1 - c0};
    });
  }
  while (ready.load(std::memory_order_acquire) < producers) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  ProducerTimes sum;
  int64_t first_start = INT64_MAX, last_end = INT64_MIN;
  for (const Times& t : times) {
    sum.wall_ns += t.end_ns - t.start_ns;
    sum.cpu_ns += t.cpu_ns;
    first_start = std::min(first_start, t.start_ns);
    last_end = std::max(last_end, t.end_ns);
  }
  sum.span_ns = last_end - first_start;
  return sum;
}

// Polls `done()` every millisecond until it is true or `timeout_ns` passed.
template <typename Done>
bool WaitFor(Done&& done, int64_t timeout_ns) {
  const int64_t until = NowNanos() + timeout_ns;
  while (!done()) {
    if (NowNanos() >= until) return false;
    SleepNanos(1000000);
  }
  return true;
}

// Waits until the process has been (nearly) idle for one `window_ns`: its
// CPU time (every thread; the caller sleeps meanwhile) grew by at most
// `max_busy` of the window. Lets a model's thread finish a backlog that its
// Pending() count does not show (tickwheel counts a timeout at newTimeout(),
// before its worker has filed it into the wheel). Returns the time waited,
// or -1 if the process was still busy after `timeout_ns`.
inline int64_t WaitUntilIdle(int64_t window_ns, double max_busy, int64_t timeout_ns) {
  const int64_t start = NowNanos();
  while (NowNanos() - start < timeout_ns) {
    const double cpu0 = ProcessCpuSeconds();
    const int64_t t0 = NowNanos();
    SleepNanos(window_ns);
    const double busy = (ProcessCpuSeconds() - cpu0) * 1e9 /
                        static_cast<double>(NowNanos() - t0);
    if (busy <= max_busy) return NowNanos() - start;
  }
  return -1;
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
