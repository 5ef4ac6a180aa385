// tools/bench/bench_config.h
// -----------------------------------------------------------------------------
// The benchmark's sizes and switches. ParseFlags fills the flag fields from
// the command line (--name=value or --name value) over the defaults in its
// table, which --help lists. The defaults are what a user would see: each run
// in a fresh process after a short warm-up, tickwheel with default
// TimerOptions except in the workloads about timing, which run at --tick_ms.
// LAB MODE flags change the conditions away from a user's, to study the
// machine rather than the timers.

#ifndef TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_
#define TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tickwheel::bench {

// Every timer --impls may name, in the report's column order: tickwheel, then
// the baselines. "netty" runs in a JVM of its own (netty_bench.h).
inline constexpr const char* kTimers[] = {"tickwheel", "asio",     "heap",
                                          "libuv",     "libevent", "netty"};

struct BenchConfig {
  // Flags (defaults: --help).
  int64_t reps = 0, seed = 0, warmup = 0, n = 0, prime_mb = 0;
  double tick_ms = 0;
  bool isolate = true, quick = false;
  std::vector<std::string> only, impls;  // only: empty runs every workload
  std::vector<int64_t> producers, depth_pending;
  std::string json_path, markdown_path, command_line;
  std::string netty_jar;  // Netty's common jar, HashedWheelTimer's
  std::vector<std::pair<std::string, std::string>>
      flags;  // every flag's text, table order

  // Fixed sizes and times, shortened by --quick.
  double far_min_s = 10, far_max_s = 60;  // delays of the far timeouts
  int64_t depth_calls = 200000, lateness_n = 20000;
  int64_t coro_requests = 200000;  // coro_deadline's requests per run
  double lateness_min_ms = 10, lateness_max_ms = 2000;
  double idle_settle_s = 1, idle_s = 5;
  double release_wait_s = 10;  // after the cancels, before the RSS reading
  double mass_expiry_window_ms = 100, mass_expiry_lead_ms = 3000;
  double burst_lead_ms = 1500, burst_delay_ms = 200;

  // Set by PrepareNetty() before the runs (netty_bench.h): the folder of the
  // compiled Netty harness, or, empty, netty_skipped says why netty cannot run.
  std::string netty_classes, netty_skipped;

  bool Runs(const std::string& workload) const;
  bool Uses(const std::string& impl) const;
};

// "" on success, "help" for --help, else an error naming the bad flag.
std::string ParseFlags(int argc, char** argv, BenchConfig& config);
std::string Usage();
// "--reps=1" for each flag that changes how runs are measured (not which).
std::vector<std::string> NonDefaultFlags(const BenchConfig& config);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_BENCH_CONFIG_H_
