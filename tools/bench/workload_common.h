// tools/bench/workload_common.h
// -----------------------------------------------------------------------------
// What the workloads (workloads_throughput.h, workloads_timing.h) share: the
// result of one run, the 16-byte tasks they schedule, random delays, and the
// helper that starts producer threads together and times them.
//
// Every task captures exactly 16 bytes (a pointer and an integer), the size
// issue #3 fixes for W4, so that in every workload all three models store the
// task inline in their type-erased holder (absl::AnyInvocable for tickwheel,
// std::function for the other two) and nobody pays an extra allocation.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_

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

// What RunProducers measured, summed over the producer threads.
struct ProducerTimes {
  int64_t wall_ns = 0;  // each thread's wall time inside body
  int64_t cpu_ns = 0;   // each thread's CPU time inside body
};

// Starts `producers` threads, releases them together, runs body(p) on thread
// p and sums, over the threads, the wall time and the CPU time each spent in
// body. Divided by the operation count, wall_ns is the mean cost of one call
// as its caller sees it (preemption and blocking on a lock included), cpu_ns
// the mean CPU the caller spent (neither included).
template <typename Body>
ProducerTimes RunProducers(int producers, Body&& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<ProducerTimes> times(static_cast<size_t>(producers));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(producers));
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const int64_t t0 = NowNanos();
      const int64_t c0 = ThreadCpuNanos();
      body(p);
      times[static_cast<size_t>(p)] = {NowNanos() - t0, ThreadCpuNanos() - c0};
    });
  }
  while (ready.load(std::memory_order_acquire) < producers) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  ProducerTimes sum;
  for (const ProducerTimes& t : times) {
    sum.wall_ns += t.wall_ns;
    sum.cpu_ns += t.cpu_ns;
  }
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

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
