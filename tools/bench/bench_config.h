// tools/bench/bench_config.h
// -----------------------------------------------------------------------------
// BenchConfig: every size, tick and switch of the benchmark, and the parser of
// its command-line flags (--name=value or --name value; --help lists them
// with their defaults). The defaults are the workloads of issues #3 and #6
// (1 ms ticks, 1,000,000 timeouts, R = 5) and make a full run take about ten
// minutes on 2 cores; the smoke test (tests/bench_smoke_test.sh) passes tiny
// sizes.

#ifndef TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_
#define TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tickwheel::bench {

struct BenchConfig {
  int reps = 5;                          // R: repetitions of each workload
  std::vector<std::string> only;         // workloads to run; empty = all
  std::vector<std::string> impls = {"tickwheel", "asio", "heap"};
  std::vector<int> producers = {1, 2};   // W1, W2: producer thread counts
  uint64_t seed = 42;                    // for every random delay

  // W1, W2, W4, W7: tickwheel tick, wheel size, delays uniform in [min, max]
  // (the delays of W9 too).
  double tick_ms = 1;
  int ticks_per_wheel = 512;
  double far_min_s = 10;
  double far_max_s = 60;
  int64_t w1_n = 1000000;                // timeouts per W1 run, all producers
  int64_t w2_n = 1000000;                // schedule+cancel pairs per W2 run
  int64_t w4_n = 1000000;                // pending timeouts in W4

  // W3 accuracy.
  double w3_tick_ms = 1;
  int64_t w3_k = 20000;
  double w3_min_ms = 10;
  double w3_max_ms = 2000;

  // W5 idle.
  double w5_tick_ms = 1;
  double w5_idle_s = 5;

  // W6 mass expiry.
  double w6_tick_ms = 1;
  int64_t w6_n = 1000000;
  double w6_window_ms = 100;
  double w6_lead_ms = 3000;              // from the first schedule to the window

  // W7 schedule with D pending: one run per depth D; M timed schedules.
  std::vector<int> w7_depths = {1000, 1000000};
  int64_t w7_m = 200000;

  // W8 burst accuracy: N timeouts from one producer, all due at one instant
  // lead_ms after the first schedule (variant "same deadline"), or each
  // delay_ms after its own schedule (variant "same delay").
  double w8_tick_ms = 1;
  int64_t w8_n = 1000000;
  double w8_lead_ms = 1500;
  double w8_delay_ms = 200;

  // W9 idle with N pending (delays far_min_s..far_max_s): settle, then
  // measure for idle_s (cut short to end before the earliest deadline).
  double w9_tick_ms = 1;
  int64_t w9_n = 1000000;
  double w9_settle_s = 1;
  double w9_idle_s = 5;

  std::string json_path;                 // --json FILE
  std::string svg_path;                  // --svg FILE (W3 lateness CDF)
  std::string command_line;              // as invoked, for the report
  std::vector<std::string> args;         // argv[1..], for child processes

  // Run every (workload, implementation, repetition) in a fresh child
  // process (isolation.h), so that no run inherits another's heap, pools or
  // RSS. --isolate=0 runs everything in this process (for valgrind).
  bool isolate = true;
  // Before starting each child process, touch and release this many MiB of
  // huge-page-advised memory, so that the child's first touches land on
  // pages its host still backs. On a VM whose guest reports free memory back
  // to the host (free page reporting), memory that sat free for a few
  // seconds must be faulted in again on the host: 4-13x slower first
  // touches, whichever timer makes them (docs/PERFORMANCE.md). 256 MiB
  // covers W7's 1.2M nodes (77 MB) with room for the rest. 0: off.
  int64_t prime_mb = 256;
  // Internal: set in a child process to "<workload>:<impl>:<variant>:<seed>".
  std::string child;

  bool Runs(const std::string& workload) const;
  bool Uses(const std::string& impl) const;
};

// Parses argv into `config`. Returns "" on success, "help" for --help (the
// caller prints Usage()), or an error message naming the bad flag.
std::string ParseFlags(int argc, char** argv, BenchConfig& config);

// The flag list with defaults, for --help.
std::string Usage();

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_
