#include "tools/bench/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {
namespace {

std::string Number(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

std::string Cell(const std::optional<Summary>& s, int decimals) {
  if (!s) return "-";
  if (s->count == 1) return Number(s->median, decimals);
  return fmt::format("{} [{}-{}]", Number(s->median, decimals),
                     Number(s->min, decimals), Number(s->max, decimals));
}

std::string Ratio(const std::optional<Summary>& tw,
                  const std::optional<Summary>& other, Better better) {
  if (!tw || !other || better == Better::kNeither) return "-";
  if (tw->median < 0 || other->median < 0) return "-";  // e.g. RSS noise
  if (other->median == 0) return tw->median == 0 ? "1.00x" : "inf";
  return fmt::format("{:.2f}x", tw->median / other->median);
}

const char* BetterText(Better b) {
  switch (b) {
    case Better::kLower: return "lower";
    case Better::kHigher: return "higher";
    case Better::kNeither: return "-";
  }
  return "-";
}

}  // namespace

RunInfo CollectRunInfo() {
  RunInfo info;
  const std::time_t now = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  info.date = buf;
  info.load_start = LoadAverage();
  info.memory = MemoryEnvironment();
  utsname u{};
  uname(&u);
  info.host = fmt::format("{} cores, {} {} {}", sysconf(_SC_NPROCESSORS_ONLN),
                          u.sysname, u.release, u.machine);
#ifdef NDEBUG
  const char* ndebug = "NDEBUG";
#else
  const char* ndebug = "asserts on (not an optimised build?)";
#endif
  info.compiler = fmt::format("{} {}, {}",
#ifdef __clang__
                              "clang",
#else
                              "gcc",
#endif
                              __VERSION__, ndebug);
  return info;
}

void PrintReport(std::FILE* out, const Results& r,
                 const std::vector<TargetResult>& targets,
                 const BenchConfig& c, const RunInfo& info) {
  fmt::print(out, "tickwheel benchmark, {}\n", info.date);
  fmt::print(out, "host: {}; {}\n", info.host, info.compiler);
  fmt::print(out, "load average (1/5/15 min): {} at start, {} at end\n",
             info.load_start, info.load_end);
  fmt::print(out, "memory: {}; {}\n", info.memory,
             c.prime_mb > 0 ? fmt::format("{} MiB primed before each cell "
                                          "(--prime_mb)", c.prime_mb)
                            : std::string("not primed (--prime_mb=0)"));
  fmt::print(out, "command: {}\n", c.command_line);
  fmt::print(out,
             "R={} repetitions per cell: median [min-max]. "
             "tw/x = tickwheel / x from the medians;\n"
             "for 'lower' rows < 1.00x favours tickwheel, for 'higher' rows "
             "> 1.00x does. Total time {:.0f} s.\n\n",
             c.reps, info.elapsed_s);

  // Build every cell first, then size the columns.
  std::vector<std::string> header = {"metric", "unit", "better"};
  const std::vector<std::string>& impls = r.impls();
  for (const std::string& i : impls) header.push_back(i);
  std::vector<std::string> others;
  const bool has_tw = !impls.empty() && impls.front() == "tickwheel";
  if (has_tw) {
    for (size_t i = 1; i < impls.size(); ++i) {
      others.push_back(impls[i]);
      header.push_back(fmt::format("tw/{}", impls[i]));
    }
  }
  std::vector<std::vector<std::string>> rows = {header};
  for (const MetricDef& d : r.defs()) {
    std::vector<std::string> row = {d.label, d.unit, BetterText(d.better)};
    for (const std::string& i : impls) row.push_back(Cell(r.Summarize(i, d.key), d.decimals));
    for (const std::string& o : others) {
      row.push_back(Ratio(r.Summarize("tickwheel", d.key), r.Summarize(o, d.key), d.better));
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += fmt::format("{:<{}}", row[i], width[i]);
      if (i + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print(out, "{}\n", line);
  };
  print_row(rows[0]);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  fmt::print(out, "{}\n", std::string(total - 2, '-'));
  for (size_t i = 1; i < rows.size(); ++i) print_row(rows[i]);

  auto print_targets = [&](int issue) {
    for (const TargetResult& t : targets) {
      if (t.issue != issue) continue;
      const char* verdict = !t.met ? "n/a   " : (*t.met ? "MET   " : "MISSED");
      fmt::print(out, "  {}  {:<20} {:<30} {}\n", verdict, t.id, t.requirement,
                 t.measured);
    }
  };
  fmt::print(out, "\nTargets for tickwheel (issue #3), from the medians:\n");
  print_targets(3);
  fmt::print(out,
             "\nTargets for tickwheel (issue #6), from the medians: median "
             "[min-max]; heap median, tw/heap:\n");
  const std::vector<std::string> gaps = Issue6ConditionGaps(c);
  if (!gaps.empty()) {
    fmt::print(out, "  (this run differs from the conditions of issue #6: {})\n",
               fmt::join(gaps, "; "));
  }
  print_targets(6);
  if (!r.notes().empty()) {
    fmt::print(out, "\nNotes:\n");
    for (const std::string& n : r.notes()) fmt::print(out, "  {}\n", n);
  }
  fmt::print(out, "\nCorrectness checks: {}\n",
             r.failures().empty() ? "all passed"
                                  : fmt::format("{} FAILED", r.failures().size()));
  for (const Failure& f : r.failures()) {
    fmt::print(out, "  FAILED {} {} rep {}: {}\n", f.workload, f.impl, f.rep,
               f.message);
  }
}

}  // namespace tickwheel::bench
