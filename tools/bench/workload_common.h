// tools/bench/workload_common.h
// -----------------------------------------------------------------------------
// What the workloads share: a run's output, random delays, producer threads
// released together and timed, waits, the check at Stop(), and the warm-up.
// Every task captures exactly 16 bytes, so that all three timers store it
// inline and none pays an extra allocation.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/bench_config.h"
#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

struct RepOutput {  // one repetition of one workload variant on one timer
  std::map<std::string, double> values;      // by metric name
  std::vector<std::string> failures, notes;  // failures: checks that failed
};

struct CountingTask {
  std::atomic<int64_t>* runs;
  int64_t payload;
  void operator()() const { runs->fetch_add(1, std::memory_order_relaxed); }
};
static_assert(sizeof(CountingTask) == 16);

inline std::chrono::nanoseconds Ms(double ms) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
}
inline std::chrono::nanoseconds Seconds(double s) { return Ms(s * 1e3); }
inline void SleepNanos(int64_t ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

inline BenchTimerOptions TickOptions(const BenchConfig& c) {
  return {Ms(c.tick_ms), std::nullopt};
}

// `n` delays (ns) uniform in [min, max], dealt round-robin into `parts`.
inline std::vector<std::vector<int64_t>> RandomDelays(
    int64_t n, int parts, std::chrono::nanoseconds min,
    std::chrono::nanoseconds max, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(min.count(), max.count());
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(parts));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i % parts)].push_back(dist(rng));
  return out;
}
inline std::vector<std::vector<int64_t>> FarDelays(const BenchConfig& c,
                                                   int64_t n, int parts,
                                                   uint64_t seed) {
  return RandomDelays(n, parts, Seconds(c.far_min_s), Seconds(c.far_max_s),
                      seed);
}

// A CountingTask per delay (ns), scheduled back to back.
template <BenchTimer T>
void ScheduleCounting(T& timer, std::span<const int64_t> delays,
                      std::atomic<int64_t>& runs) {
  for (int64_t d : delays)
    timer.Schedule(CountingTask{&runs, d}, std::chrono::nanoseconds(d));
}

// Resident bytes after malloc_trim, so that a difference of two counts live
// memory only.
inline int64_t TrimmedResidentBytes() {
  TrimMalloc();
  return ResidentBytes();
}

// Summed over the threads, wall time (what callers wait, preemption and lock
// waits included), CPU time and minor page faults inside body; span: first
// in to last out.
struct ProducerTimes {
  int64_t wall_ns = 0, cpu_ns = 0, span_ns = 1, faults = 0;
};

// Runs body(p) on `producers` threads released together.
template <typename Body>
ProducerTimes RunProducers(int producers, Body&& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<int64_t> start(producers), end(producers), cpu(producers),
      faults(producers);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      start[p] = NowNanos();
      const int64_t cpu0 = ThreadCpuNanos();
      const int64_t faults0 = ThreadMinorFaults();
      body(p);
      faults[p] = ThreadMinorFaults() - faults0;
      cpu[p] = ThreadCpuNanos() - cpu0;
      end[p] = NowNanos();
    });
  }
  while (ready.load() < producers) std::this_thread::yield();
  go.store(true);
  for (std::thread& t : threads) t.join();
  ProducerTimes sum{0, 0,
                    *std::max_element(end.begin(), end.end()) -
                        *std::min_element(start.begin(), start.end())};
  for (int p = 0; p < producers; ++p) {
    sum.wall_ns += end[p] - start[p], sum.cpu_ns += cpu[p],
        sum.faults += faults[p];
  }
  return sum;
}

// Polls done() every millisecond until it holds or `timeout_ns` passed.
template <typename Done>
bool WaitFor(Done&& done, int64_t timeout_ns) {
  for (const int64_t until = NowNanos() + timeout_ns; !done();
       SleepNanos(1000000)) {
    if (NowNanos() >= until) return false;
  }
  return true;
}

// Waits until the process used at most 10% of a core over 10 ms, so that a
// timer's thread has finished the backlog its Pending() does not show
// (tickwheel counts a timeout at newTimeout(), before its worker files it).
inline void WaitUntilIdle(RepOutput& out) {
  const auto busy = [] {
    const double cpu0 = ProcessCpuSeconds();
    SleepNanos(10'000'000);
    return ProcessCpuSeconds() - cpu0 > 0.001;
  };
  if (!WaitFor([&] { return !busy(); }, 60'000'000'000))
    out.notes.push_back("busy for 60 s");
}

template <BenchTimer T>  // Asio arms on its own thread
void WaitArmed(T& timer, int64_t n, RepOutput& out) {
  if (!WaitFor([&] { return timer.Pending() >= n; }, 120'000'000'000)) {
    out.failures.push_back(
        fmt::format("only {} of {} armed after 120 s", timer.Pending(), n));
  }
}

// Stops the timer; a failure unless it returned `pending` or if a task ran.
template <BenchTimer T>
void StopAndCheck(T& timer, int64_t pending, const std::atomic<int64_t>& runs,
                  RepOutput& out) {
  if (const int64_t left = timer.Stop(); left != pending) {
    out.failures.push_back(
        fmt::format("stop returned {} pending, expected {}", left, pending));
  }
  if (runs.load() != 0)
    out.failures.push_back(fmt::format("{} tasks ran", runs.load()));
}

// Before each run, a throwaway timer of the same model runs `warmup`
// timeouts, half due in 1 ms and half cancelled at once, and stops: the run
// meets warm code and a warm allocator, as in a process that has used its
// timer before, and no thread of the warm-up is left.
template <BenchTimer T>
void WarmUp(const BenchConfig& c) {
  std::atomic<int64_t> runs{0};
  T timer(TickOptions(c));
  for (int64_t i = 0; i < c.warmup; ++i) {
    typename T::Handle h = timer.Schedule(CountingTask{&runs, i},
                                          i % 2 == 0 ? Ms(1) : Seconds(3600));
    if (i % 2 == 1) timer.Cancel(h);
  }
  WaitFor([&] { return runs.load() >= (c.warmup + 1) / 2; }, 5'000'000'000);
}

// Waits until `done` reaches n (a failure if not within 60 s of
// `last_deadline`) and stops the timer.
template <BenchTimer T>
void AwaitRuns(T& timer, const std::atomic<int64_t>& done, int64_t n,
               int64_t last_deadline, RepOutput& out) {
  WaitFor([&] { return done.load(std::memory_order_acquire) >= n; },
          std::max<int64_t>(0, last_deadline - NowNanos()) + 60'000'000'000);
  timer.Stop();
  if (done.load() < n)
    out.failures.push_back(fmt::format("{} of {} ran", done.load(), n));
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOAD_COMMON_H_
