// tools/bench/workloads/run_times.h
// -----------------------------------------------------------------------------
// Lateness, shared by the lateness and burst workloads: tasks that record when
// they ran, scheduled with the deadline each call asked for, and lateness =
// run time - that deadline. The deadline is the time read just before the
// call plus the delay, so a timer that reads its clock later can only look
// later, never earlier.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_RUN_TIMES_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_RUN_TIMES_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// Written on the timer's thread; read after Stop() has joined it.
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
// ahead; waits until all ran (a failure if not within 60 s of the last
// deadline) and stops the timer.
template <BenchTimer T, typename DelayOf>
void ScheduleAndAwait(T& timer, RunTimes& t, DelayOf&& delay_of, RepOutput& out) {
  for (size_t i = 0; i < t.deadline.size(); ++i) {
    const int64_t now = NowNanos();
    const int64_t d = std::max<int64_t>(0, delay_of(i, now));
    t.deadline[i] = now + d;
    timer.Schedule(RecordTask{&t, i}, std::chrono::nanoseconds(d));
  }
  const int64_t n = static_cast<int64_t>(t.deadline.size());
  const int64_t last = *std::max_element(t.deadline.begin(), t.deadline.end());
  WaitFor([&] { return t.done.load(std::memory_order_acquire) >= n; },
          std::max<int64_t>(0, last - NowNanos()) + 60'000'000'000);
  timer.Stop();
  if (t.done.load() < n) out.failures.push_back(fmt::format("{} of {} ran", t.done.load(), n));
}

// The p-quantile (0 <= p <= 1) of `sorted`, by nearest rank.
inline double Quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// Lateness of every task that ran, sorted, in `unit_ns` units; a failure for
// each that ran early.
inline std::vector<double> SortedLateness(const RunTimes& t, double unit_ns, RepOutput& out) {
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

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_RUN_TIMES_H_
