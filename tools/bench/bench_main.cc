// tools/bench/bench_main.cc
// -----------------------------------------------------------------------------
// //tools/bench:bench — tickwheel side by side with Boost.Asio and a heap
// timer thread, in one process run (issues #3 and #6). See
// docs/PERFORMANCE.md.
//
//   bazel build -c opt --config=opt //tools/bench:bench
//   bazel-bin/tools/bench/bench --json=bench.json --svg=w3.svg
//
// Isolation: by default every run (one workload, one implementation, one
// repetition) happens in a fresh child process (isolation.h), so that none
// inherits the heap or the node pool an earlier run left behind;
// --isolate=0 runs them all in this process.
//
// Order: workload by workload (W4 first, while the heap is fresh, then W1,
// W2, W3, W5, W6, W7, W8, W9); within a workload, variant by variant
// (runners.h: W1/W2 per producer count, W7 per depth, W8 per kind of burst),
// within a variant repetition by repetition, and within a repetition every
// model once. So the models of one row are measured minutes apart at most and
// drift on a noisy machine hits them alike. Each model gets the same random
// delays in a repetition (the seed depends on the repetition only).
//
// stdout: the report (report.h). stderr: one progress line per run.
// Exit status: 0, or 1 if a correctness check failed (never for a missed
// performance target: those are measurements, reported in the table), or 2
// for a bad flag.

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/bench_config.h"
#include "tools/bench/isolation.h"
#include "tools/bench/json_report.h"
#include "tools/bench/proc_stats.h"
#include "tools/bench/report.h"
#include "tools/bench/results.h"
#include "tools/bench/runners.h"
#include "tools/bench/svg_plot.h"
#include "tools/bench/targets.h"

namespace tickwheel::bench {
namespace {

// One line per finished run on stderr; on a terminal each replaces the last.
class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(2) == 1) {}

  void Report(const std::string& what, const RepOutput& out, int64_t ns) {
    ++done_;
    std::string values;
    for (const auto& [key, value] : out.values) {
      values += fmt::format(" {}={:.6g}", key.substr(key.find('.') + 1), value);
    }
    const std::string line = fmt::format("[{:>3}/{}] {} ({:.1f} s){}{}", done_, total_,
                                         what, static_cast<double>(ns) / 1e9, values,
                                         out.failures.empty() ? "" : " CHECK FAILED");
    if (tty_) {
      fmt::print(stderr, "\r\033[K{}", line.substr(0, 160));
      if (done_ == total_) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
  }

 private:
  int total_;
  int done_ = 0;
  bool tty_;
};

int Main(int argc, char** argv) {
  BenchConfig config;
  if (std::string err = ParseFlags(argc, argv, config); !err.empty()) {
    if (err == "help") {
      fmt::print("{}", Usage());
      return 0;
    }
    fmt::print(stderr, "bench: {}\n\n{}", err, Usage());
    return 2;
  }
  if (!config.child.empty()) return RunChild(config);
  // Table order: tickwheel first, then the others as listed.
  std::vector<std::string> impls;
  for (const char* name : {"tickwheel", "asio", "heap"}) {
    if (config.Uses(name)) impls.push_back(name);
  }
  Results results(config, impls);
  RunInfo info = CollectRunInfo();

  const std::vector<std::string> order = {"W4", "W1", "W2", "W3", "W5",
                                          "W6", "W7", "W8", "W9"};
  int total = 0;
  for (const std::string& w : order) {
    if (!config.Runs(w)) continue;
    const int variants = static_cast<int>(Variants(w, config).size());
    total += variants * config.reps * static_cast<int>(impls.size());
  }
  Progress progress(total);
  const int64_t start = NowNanos();
  for (const std::string& w : order) {
    if (!config.Runs(w)) continue;
    for (int variant : Variants(w, config)) {
      const std::string label = VariantLabel(w, variant);
      for (int rep = 1; rep <= config.reps; ++rep) {
        const uint64_t seed = config.seed + 1000 * static_cast<uint64_t>(rep);
        for (const std::string& impl : impls) {
          const int64_t t0 = NowNanos();
          RepOutput out = config.isolate
                              ? RunInChild(config, w, impl, variant, seed)
                              : Runner(impl)(w, config, variant, seed);
          const std::string what = fmt::format(
              "{}{} {:<9} rep {}/{}", w, label.empty() ? "" : " " + label, impl,
              rep, config.reps);
          progress.Report(what, out, NowNanos() - t0);
          // "W1 P=2": failures, notes and counters of one variant keep their
          // own names (counters of P=1 and P=2 used to share one key).
          results.Record(label.empty() ? w : w + " " + label, impl, rep,
                         std::move(out));
        }
      }
    }
  }
  info.elapsed_s = static_cast<double>(NowNanos() - start) / 1e9;
  info.load_end = LoadAverage();

  const std::vector<TargetResult> targets = EvaluateTargets(results, config);
  PrintReport(stdout, results, targets, config, info);
  int status = results.failures().empty() ? 0 : 1;
  std::string error;
  if (!config.json_path.empty() &&
      !WriteJson(config.json_path, results, targets, config, info, error)) {
    fmt::print(stderr, "bench: {}\n", error);
    status = 1;
  }
  if (!config.svg_path.empty() && config.Runs("W3")) {
    std::vector<LatenessSeries> series;
    for (const std::string& impl : impls) series.push_back({impl, results.Lateness(impl)});
    const std::string title = fmt::format(
        "W3 lateness: {} timeouts x {} reps per implementation, delays {:g}-{:g} ms",
        config.w3_k, config.reps, config.w3_min_ms, config.w3_max_ms);
    const std::string subtitle = fmt::format(
        "tickwheel tick {:g} ms; {}; {}", config.w3_tick_ms, info.host, info.date);
    if (!WriteLatenessSvg(config.svg_path, series, title, subtitle,
                          (config.w3_tick_ms + 2) * 1e3, error)) {
      fmt::print(stderr, "bench: {}\n", error);
      status = 1;
    }
  }
  return status;
}

}  // namespace
}  // namespace tickwheel::bench

int main(int argc, char** argv) { return tickwheel::bench::Main(argc, argv); }
