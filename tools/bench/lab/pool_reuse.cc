// tools/bench/lab/pool_reuse.cc
// -----------------------------------------------------------------------------
// LAB TOOL. newTimeout() must not get slower once the memory of earlier
// timeouts is recycled, as it is in a long-running server. Round 1 schedules
// N timeouts 10-60 s away on a fresh Timer; stop() returns them earliest
// deadline first and the handles die in that order, so the nodes are freed
// scattered across their region. Each later round repeats round 1 on a new
// Timer, allocating from that freed memory; expiry frees in deadline order
// too, so a server lives in the state of round 2. A pool that hands cells
// back in the order they were freed makes each call touch a cold line and
// page, and the later rounds several times slower than round 1; tickwheel's
// pool refills a thread in address order (worker/cell_pool.h). Resident
// memory after each round's stop() shows whether the pool gives memory back.
//   bazel build -c opt --config=opt //tools/bench/lab:pool_reuse
//   bazel-bin/tools/bench/lab/pool_reuse [N=1000000] [rounds=3]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"
#include "tools/bench/proc_stats.h"

int main(int argc, char** argv) {
  using tickwheel::bench::ResidentBytes;
  using tickwheel::bench::ThreadCpuNanos;
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> delay_ms(10000, 60000);
  std::vector<int64_t> delays(static_cast<size_t>(n));
  for (int64_t& d : delays) d = delay_ms(rng);
  int64_t sink = 0;
  for (int round = 1; round <= rounds; ++round) {
    auto timer = tickwheel::Timer::Create().value();
    const auto wall0 = std::chrono::steady_clock::now();
    const int64_t cpu0 = ThreadCpuNanos();
    for (int64_t d : delays) {  // a 16-byte capture, the handle dropped
      timer
          ->newTimeout([&sink, d](const tickwheel::Timeout&) { sink += d; },
                       absl::Milliseconds(d))
          .IgnoreError();
    }
    const double cpu = static_cast<double>(ThreadCpuNanos() - cpu0) / n;
    const double wall = std::chrono::duration<double, std::nano>(
                            std::chrono::steady_clock::now() - wall0)
                            .count() /
                        n;
    const size_t left =
        timer->stop().value().size();  // frees in deadline order
    timer.reset();
    tickwheel::bench::TrimMalloc();  // stop()'s vectors went to malloc: count
                                     // the pool only
    std::printf(
        "round %d: %.1f ns CPU, %.1f ns wall per newTimeout (%zu returned by "
        "stop); "
        "resident after: %.1f MB\n",
        round, cpu, wall, left, ResidentBytes() / 1e6);
  }
  return sink == 0 ? 0 : 1;
}
