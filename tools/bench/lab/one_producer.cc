// tools/bench/lab/one_producer.cc
// -----------------------------------------------------------------------------
// LAB TOOL. One thread schedules N far timeouts on a fresh Timer, as the
// bench's `schedule` workload with one producer does, and reports where the
// time of the burst goes: the cost per call, and the burst cut into slices
// of equal counts, so that a slow run shows whether every call got slower
// (cache lines shared with the worker) or a few slices stalled (faults, a
// descheduled thread). Run it in fresh processes, several times:
//   bazel build -c opt --config=opt //tools/bench/lab:one_producer
//   for i in 1 2 3 4 5; do bazel-bin/tools/bench/lab/one_producer; done
// Arguments: [n=1000000] [slices=64].

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "tickwheel/timer/timer.h"

namespace {

int64_t Nanos(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int64_t slices = argc > 2 ? std::atoll(argv[2]) : 64;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> far(10'000'000'000, 60'000'000'000);
  std::vector<int64_t> delays(static_cast<size_t>(n));
  for (int64_t& d : delays) d = far(rng);

  auto made = tickwheel::Timer::Create(tickwheel::TimerOptions{});
  if (!made.ok()) std::abort();
  tickwheel::Timer& timer = **made;
  {
    // The bench's warm-up: the worker started, the first cells in use.
    std::vector<tickwheel::Timeout> warm;
    for (int i = 0; i < 10000; ++i) {
      warm.push_back(*timer.newTimeout([] {}, std::chrono::seconds(30)));
    }
    for (auto& t : warm) t.cancel();
  }
  std::vector<int64_t> slice_ns;
  const int64_t per_slice = n / slices;
  int64_t sink = 0;
  rusage u0;
  getrusage(RUSAGE_THREAD, &u0);
  const int64_t cpu0 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  const int64_t t0 = Nanos(CLOCK_MONOTONIC);
  int64_t last = t0;
  for (int64_t i = 0; i < n; ++i) {
    auto t = timer.newTimeout([&sink, i] { sink += i; },
                              std::chrono::nanoseconds(delays[i]));
    if (!t.ok()) std::abort();
    if ((i + 1) % per_slice == 0) {
      const int64_t now = Nanos(CLOCK_MONOTONIC);
      slice_ns.push_back(now - last);
      last = now;
    }
  }
  const int64_t wall = Nanos(CLOCK_MONOTONIC) - t0;
  const int64_t cpu = Nanos(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  rusage u1;
  getrusage(RUSAGE_THREAD, &u1);
  std::vector<int64_t> sorted = slice_ns;
  std::sort(sorted.begin(), sorted.end());
  const double k = static_cast<double>(per_slice);
  std::printf(
      "ns/call %.1f  cpu/call %.1f  slice ns/call: min %.1f p50 %.1f p90 "
      "%.1f max %.1f  slowest slices:",
      wall / static_cast<double>(n), cpu / static_cast<double>(n),
      sorted.front() / k, sorted[sorted.size() / 2] / k,
      sorted[sorted.size() * 9 / 10] / k, sorted.back() / k);
  for (size_t i = 0; i < slice_ns.size(); ++i) {
    if (slice_ns[i] >= sorted[sorted.size() * 9 / 10]) {
      std::printf(" %zu:%.0f", i, slice_ns[i] / k);
    }
  }
  std::printf(
      "  this thread's switches: %ld voluntary, %ld involuntary; page "
      "faults: %ld\n",
      u1.ru_nvcsw - u0.ru_nvcsw, u1.ru_nivcsw - u0.ru_nivcsw,
      u1.ru_minflt - u0.ru_minflt);
  std::fflush(stdout);
  std::_Exit(sink == 42 ? 1 : 0);  // skip stop(): the burst is what we measure
}
