// tools/bench/lab/local_walk.cc
// -----------------------------------------------------------------------------
// LAB TOOL. The wheel's walk over N timeouts due at one instant, on one
// thread: a LocalTimer on a manual clock, so that nothing but the walk runs
// while it is timed (no worker to wake, no producer, no clock but the one
// this tool moves). The same engine as Timer's: the nodes come from the same
// pool, the walk is the same code. What burst_expiry.cc measures with the
// worker's wake-up and the machine's noise around it, this measures alone:
// the first tool to reach for when changing the expiry path, and the one to
// run under callgrind, whose count is the same run after run:
//   bazel build -c opt --config=opt //tools/bench/lab:local_walk
//   .../local_walk 1000000 9
//   valgrind --tool=callgrind \
//     --toggle-collect='tickwheel::internal::WheelDriver::AdvanceTicks*' \
//     .../local_walk 200000 1
// Each task is one relaxed add. advance() includes what follows the walk
// (the freed nodes' memory going back to the pool), reported apart.
// Arguments: [n=1000000] [rounds=5] [delay_ms=250]

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace {

int64_t Nanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Runs {
  std::atomic<int64_t> count{0};
  int64_t total = 0;
  int64_t last_ns = 0;  // when the last task ran
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int64_t delay_ms = argc > 3 ? std::atoll(argv[3]) : 250;
  std::vector<double> walks;
  for (int r = 0; r < rounds; ++r) {
    auto clock = std::make_shared<tickwheel::ManualClock>();
    tickwheel::LocalTimerOptions options;
    options.clock = clock;
    auto made = tickwheel::LocalTimer::Create(options);
    if (!made.ok()) std::abort();
    tickwheel::LocalTimer& timer = **made;
    Runs runs;
    runs.total = n;
    for (int64_t i = 0; i < n; ++i) {
      auto t = timer.newTimeout(
          [&runs] {
            if (runs.count.fetch_add(1, std::memory_order_relaxed) ==
                runs.total - 1) {
              runs.last_ns = Nanos();
            }
          },
          absl::Milliseconds(delay_ms));
      if (!t.ok()) std::abort();
    }
    clock->Advance(absl::Milliseconds(delay_ms + 1));
    const int64_t start = Nanos();
    const int64_t ran = timer.advance();
    const int64_t end = Nanos();
    if (ran != n || runs.count.load() != n) std::abort();
    const double walk = static_cast<double>(runs.last_ns - start) / n;
    walks.push_back(walk);
    std::printf(
        "walk %.1f ns/run, then %.1f ns/run more until advance() "
        "returned\n",
        walk, static_cast<double>(end - runs.last_ns) / n);
  }
  std::sort(walks.begin(), walks.end());
  std::printf("walk: min %.1f, median %.1f ns/run over %d rounds\n",
              walks.front(), walks[walks.size() / 2], rounds);
  return 0;
}
