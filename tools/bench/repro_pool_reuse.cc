// tools/bench/repro_pool_reuse.cc
// -----------------------------------------------------------------------------
// Reuse check (performance, not correctness): newTimeout() must not get slower
// once the memory of earlier timeouts is recycled.
//
// Round 1 schedules N timeouts with random delays in [10 s, 60 s] on a fresh
// Timer; stop() returns them earliest deadline first and the handles die in
// that order, so the nodes are freed scattered across the N-node region.
// Round 2 repeats round 1 on a new Timer, allocating from that freed memory.
// Expiry frees nodes in deadline order too, so a long-running server lives in
// the round-2 state.
//
// History: commit 1116d1e recycled nodes through a per-thread pool (slabs,
// never returned to the system). This program showed round 1 at about 90 ns
// of CPU per call and rounds 2-3 at about 480: the pool handed back blocks in
// the scattered order they were freed, each newTimeout() touching a cold line
// and page. Plain malloc coalesces the freed chunks and measured 113 / 106 /
// 105 ns on the same machine, so the pool was removed. Issue 6 brought a
// pool back (timer/cell_pool.h, f7fcf1e) for its cross-thread free, and this
// program caught the same fault again (62 ns in round 1, 235-250 in rounds 2
// and 3); since the pool refills threads from per-chunk bitmaps in address
// order, rounds 2 and 3 measure 49-53 ns.
//
// Run (optimised):
//   bazel build -c opt --config=opt //tools/bench:repro_pool_reuse
//   bazel-bin/tools/bench/repro_pool_reuse [N=1000000] [rounds=3]

#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Resident memory in MB (smaps_rollup's Rss), or -1.
double ResidentMb() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "Rss: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb < 0 ? -1 : static_cast<double>(kb) / 1024;
}

int64_t WallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> delay_ms(10000, 60000);
  std::vector<int64_t> delays(static_cast<size_t>(n));
  for (int64_t& d : delays) d = delay_ms(rng);

  int64_t sink = 0;
  for (int round = 1; round <= rounds; ++round) {
    auto timer = tickwheel::Timer::Create().value();
    const int64_t wall0 = WallNanos();
    const int64_t cpu0 = ThreadCpuNanos();
    for (int64_t d : delays) {
      // A 16-byte capture, handle dropped: fire-and-forget.
      timer->newTimeout([&sink, d](const tickwheel::Timeout&) { sink += d; },
                        absl::Milliseconds(d))
          .IgnoreError();
    }
    const double cpu = static_cast<double>(ThreadCpuNanos() - cpu0) / n;
    const double wall = static_cast<double>(WallNanos() - wall0) / n;
    const size_t left = timer->stop().value().size();  // frees in deadline order
    timer.reset();
    malloc_trim(0);  // stop()'s vectors went to malloc: count the pool only
    std::printf("round %d: %.1f ns CPU, %.1f ns wall per newTimeout (%zu returned by stop); "
                "resident after: %.1f MB\n",
                round, cpu, wall, left, ResidentMb());
  }
  return sink == 0 ? 0 : 1;
}
