// tools/bench/bench_main.cc
// -----------------------------------------------------------------------------
// //tools/bench:bench: tickwheel side by side with Boost.Asio, a heap timer
// thread, libuv, libevent and Netty's HashedWheelTimer in one invocation;
// docs/BENCHMARKS.md says what each workload measures and how to read the
// output.
//
// Order: workload by workload (workloads.h), variant by variant, repetition
// by repetition, and within a repetition each timer once, so that the timers
// of a row are measured seconds apart and drift on a noisy machine hits them
// alike; in a repetition every timer gets the same random delays.
// stdout: the report; stderr: a progress line per run. Exit status 0; 1 if a
// correctness check failed (a missed goal is a measurement, not a failure);
// 2 for a bad flag.

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/bench_config.h"
#include "tools/bench/goals.h"
#include "tools/bench/isolation.h"
#include "tools/bench/netty_bench.h"
#include "tools/bench/proc_stats.h"
#include "tools/bench/report.h"
#include "tools/bench/results.h"
#include "tools/bench/workloads.h"

namespace tickwheel::bench {
namespace {

// One line per finished run on stderr; on a terminal each replaces the last.
void Progress(int done, int total, const std::string& what,
              const RepOutput& out, int64_t ns) {
  std::string line =
      fmt::format("[{:>3}/{}] {} ({:.1f} s)", done, total, what, ns / 1e9);
  for (const auto& [name, value] : out.values)
    line += fmt::format(" {}={:.4g}", name, value);
  if (!out.failures.empty()) line += " CHECK FAILED";
  if (isatty(2) == 1) {
    fmt::print(stderr, "\r\033[K{}{}", line.substr(0, 160),
               done == total ? "\n" : "");
  } else {
    fmt::print(stderr, "{}\n", line);
  }
}

void RunAll(const BenchConfig& c, const std::vector<std::string>& impls,
            Results& results) {
  int total = 0, done = 0;
  for (const Workload& w : Workloads()) {
    if (!c.Runs(w.name)) continue;
    for (const Variant& v : w.variants(c)) {
      for (const std::string& impl : impls)
        total += w.Runs(v, impl) && Available(c, impl) ? c.reps : 0;
    }
  }
  for (const Workload& w : Workloads()) {
    if (!c.Runs(w.name)) continue;
    for (const Variant& v : w.variants(c)) {
      for (int rep = 1; rep <= c.reps; ++rep) {
        const uint64_t seed = static_cast<uint64_t>(c.seed + 1000 * rep);
        for (const std::string& impl : impls) {
          // A run without this timer, or netty without a JVM.
          if (!w.Runs(v, impl) || !Available(c, impl)) continue;
          const int64_t t0 = NowNanos();
          const RepOutput out =
              RunIsolated(c, [&] { return w.run.at(impl)(c, v.value, seed); });
          Progress(++done, total,
                   fmt::format("{}, {}, rep {}", RunLabel(w, v), impl, rep),
                   out, NowNanos() - t0);
          results.Record(RunLabel(w, v), KeyPrefix(w, v), impl, rep, out);
        }
      }
    }
  }
}

int Main(int argc, char** argv) {
  BenchConfig config;
  std::string err = ParseFlags(argc, argv, config);
  for (const std::string& w : config.only) {
    if (err.empty() && FindWorkload(w) == nullptr)
      err = "unknown workload " + w;
  }
  std::string help = Usage() + "\nWorkloads, in run order:\n";
  for (const Workload& w : Workloads())
    help += fmt::format("  {:<16} {}\n", w.name, w.what);
  if (err == "help") fmt::print("{}", help);
  if (!err.empty() && err != "help")
    fmt::print(stderr, "bench: {}\n\n{}", err, help);
  if (!err.empty()) return err == "help" ? 0 : 2;

  std::vector<std::string> impls;  // tickwheel first, then the baselines
  for (const char* name : kTimers) {
    if (config.Uses(name)) impls.push_back(name);
  }
  Results results(Rows(config), impls);
  RunInfo info = CollectRunInfo();
  const int64_t start = NowNanos();
  bool netty_runs = false;  // some workload of this run has a netty cell
  for (const Workload& w : Workloads())
    netty_runs |= config.Runs(w.name) && w.run.count("netty") > 0;
  if (netty_runs) PrepareNetty(config);
  if (!config.netty_skipped.empty()) {
    fmt::print(stderr, "bench: netty not run: {}\n", config.netty_skipped);
    results.AddNote("netty not run: " + config.netty_skipped);
  }
  RunAll(config, impls, results);
  CleanUpNetty(config);
  info.elapsed_s = static_cast<double>(NowNanos() - start) / 1e9;
  info.load_end = LoadAverage();
  const std::vector<GoalResult> goals = EvaluateGoals(results);
  PrintReport(stdout, results, goals, config, info);
  if (!config.json_path.empty() &&
      !WriteJson(config.json_path, results, goals, config, info)) {
    fmt::print(stderr, "bench: cannot write {}\n", config.json_path);
    return 1;
  }
  if (!config.markdown_path.empty() &&
      !WriteMarkdown(config.markdown_path, results, config, info)) {
    fmt::print(stderr, "bench: cannot write {}\n", config.markdown_path);
    return 1;
  }
  return results.failures().empty() ? 0 : 1;
}

}  // namespace
}  // namespace tickwheel::bench

int main(int argc, char** argv) { return tickwheel::bench::Main(argc, argv); }
