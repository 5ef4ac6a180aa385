// tools/bench/lab/burst_expiry.cc
// -----------------------------------------------------------------------------
// LAB TOOL. N timeouts due at one instant on a fresh Timer with default
// options but the tick, as the bench's `burst` (same deadline) does, and where
// the time from the deadline to the last run goes: the wait for the worker to
// start (deadline to first run), the walk (first run to last run), and the
// worker's CPU over that window, and how much of the process's memory is on
// huge pages (the node pool asks for small ones; this line shows what the
// kernel gave).
// Each task is one relaxed add, so the walk is the engine's own cost. Repeats
// in one process, so that a profiler sees many expiries:
//   bazel build -c opt --config=opt //tools/bench/lab:burst_expiry
//   perf record -e cpu-clock -F 20000 .../burst_expiry 1000000 10
// Arguments: [n=1000000] [rounds=1] [lead_ms=300] [tick_ms=1] (the bench's
// tick; the default options' is 100).

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tickwheel/timer/timer.h"

namespace {

int64_t Nanos(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Runs {
  std::atomic<int64_t> count{0};
  std::atomic<int64_t> first_ns{0};
  std::atomic<int64_t> last_ns{0};
  int64_t total = 0;
  int64_t deadline = 0;
  // Runs by lateness, in milliseconds (the last bin: later).
  std::atomic<int64_t> by_ms[8] = {};
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 1;
  const int64_t lead_ms = argc > 3 ? std::atoll(argv[3]) : 300;
  const int64_t tick_ms = argc > 4 ? std::atoll(argv[4]) : 1;
  for (int r = 0; r < rounds; ++r) {
    tickwheel::TimerOptions options;
    options.tick_duration = absl::Milliseconds(tick_ms);
    auto made = tickwheel::Timer::Create(options);
    if (!made.ok()) std::abort();
    tickwheel::Timer& timer = **made;
    Runs runs;
    runs.total = n;
    const int64_t deadline = Nanos(CLOCK_MONOTONIC) + lead_ms * 1000000;
    runs.deadline = deadline;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t d = deadline - Nanos(CLOCK_MONOTONIC);
      auto t = timer.newTimeout(
          [&runs] {
            const int64_t k =
                runs.count.fetch_add(1, std::memory_order_relaxed);
            if (k == 0) runs.first_ns.store(Nanos(CLOCK_MONOTONIC));
            if (k % 1024 == 0) {
              const int64_t ms =
                  (Nanos(CLOCK_MONOTONIC) - runs.deadline) / 1000000;
              runs.by_ms[ms < 0 ? 0 : ms > 7 ? 7 : ms].fetch_add(1);
            }
            if (k == runs.total - 1) runs.last_ns.store(Nanos(CLOCK_MONOTONIC));
          },
          std::chrono::nanoseconds(d > 0 ? d : 0));
      if (!t.ok()) std::abort();
    }
    if (Nanos(CLOCK_MONOTONIC) > deadline) std::printf("(scheduling overran) ");
    // Sleep to just before the deadline, then read the process's CPU: the
    // main thread sleeps from here on, so what the process spends until the
    // last run is the worker's.
    const int64_t before = deadline - 20'000'000 - Nanos(CLOCK_MONOTONIC);
    if (before > 0) {
      timespec ts{before / 1000000000, before % 1000000000};
      nanosleep(&ts, nullptr);
    }
    rusage u0;
    getrusage(RUSAGE_SELF, &u0);
    const int64_t cpu0 = Nanos(CLOCK_PROCESS_CPUTIME_ID);
    while (runs.last_ns.load() == 0) {
      timespec ts{0, 1000000};
      nanosleep(&ts, nullptr);
    }
    const int64_t cpu = Nanos(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    rusage u1;
    getrusage(RUSAGE_SELF, &u1);
    const int64_t first = runs.first_ns.load() - deadline;
    const int64_t last = runs.last_ns.load() - deadline;
    std::printf(
        "deadline->first %.2f ms  deadline->last %.2f ms  walk %.1f ns/run  "
        "worker cpu %.1f ns/run  switches: %ld voluntary (main's 1 ms "
        "sleeps included), %ld involuntary\n",
        first / 1e6, last / 1e6,
        static_cast<double>(last - first) / static_cast<double>(n),
        static_cast<double>(cpu) / static_cast<double>(n),
        u1.ru_nvcsw - u0.ru_nvcsw, u1.ru_nivcsw - u0.ru_nivcsw);
    {
      FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
      char line[256];
      while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
        if (std::strncmp(line, "AnonHugePages:", 14) == 0 ||
            std::strncmp(line, "Rss:", 4) == 0) {
          line[std::strcspn(line, "\n")] = 0;
          std::printf("  %s", line);
        }
      }
      if (f != nullptr) std::fclose(f);
      std::printf("\n");
    }
    std::printf("  sampled runs by ms late:");
    for (auto& b : runs.by_ms) std::printf(" %ld", b.load());
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
