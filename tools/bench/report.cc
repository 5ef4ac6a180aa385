#include "tools/bench/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {
namespace {

std::string Cell(const std::optional<Summary>& s, int d) {
  if (!s) return "-";
  if (s->count == 1) return fmt::format("{:.{}f}", s->median, d);
  return fmt::format("{:.{}f} [{:.{}f}-{:.{}f}]", s->median, d, s->min, d,
                     s->max, d);
}

std::string Ratio(const std::optional<Summary>& tw,
                  const std::optional<Summary>& other, Better better) {
  if (!tw || !other || better == Better::kNeither || tw->median < 0 ||
      other->median < 0) {
    return "-";
  }
  if (other->median == 0) return tw->median == 0 ? "1.00x" : "inf";
  return fmt::format("{:.2f}x", tw->median / other->median);
}

void PrintHeader(std::FILE* out, const BenchConfig& c, const RunInfo& info) {
  fmt::print(out, "tickwheel benchmark\nhost: {}; {}\n", info.host,
             info.compiler);
  fmt::print(out, "load average (1/5/15 min): {} at start, {} at end\n",
             info.load_start, info.load_end);
  fmt::print(out, "memory: {}\n", info.memory);
  if (!PrimingText(c).empty()) fmt::print(out, "{}\n", PrimingText(c));
  fmt::print(out, "command: {}\n", c.command_line);
  fmt::print(
      out,
      "R={}, {}, each after a warm-up of {} timeouts; timers in turns. Total "
      "{:.0f} s.\n"
      "median [min-max]; tw/x = tickwheel / x from the medians.\n\n",
      c.reps,
      c.isolate ? "each run in a fresh process" : "all runs in this process",
      c.warmup, info.elapsed_s);
}

// The table as cells: a header row, then a row per metric.
std::vector<std::vector<std::string>> TableCells(const Results& r) {
  std::vector<std::string> others(
      r.impls().begin() + (r.impls()[0] == "tickwheel"), r.impls().end());
  if (others.size() == r.impls().size())
    others.clear();  // no tickwheel: no ratios
  std::vector<std::vector<std::string>> rows = {{"metric", "unit", "better"}};
  for (const std::string& i : r.impls()) rows[0].push_back(i);
  for (const std::string& o : others) rows[0].push_back("tw/" + o);
  for (const Row& d : r.rows()) {
    const char* better[] = {"lower", "higher", "-"};
    rows.push_back({d.label, d.unit, better[static_cast<int>(d.better)]});
    for (const std::string& i : r.impls())
      rows.back().push_back(Cell(r.Summarize(i, d.key), d.decimals));
    for (const std::string& o : others) {
      rows.back().push_back(Ratio(r.Summarize("tickwheel", d.key),
                                  r.Summarize(o, d.key), d.better));
    }
  }
  return rows;
}

void PrintTable(std::FILE* out, const Results& r) {
  const std::vector<std::vector<std::string>> rows = TableCells(r);
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size() + 2);
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i)
      line += fmt::format("{:<{}}", rows[k][i], width[i]);
    fmt::print(out, "{}\n", line.substr(0, line.find_last_not_of(' ') + 1));
    if (k == 0)
      fmt::print(out, "{:-<{}}\n", "", line.find_last_not_of(' ') + 1);
  }
}

void PrintGoals(std::FILE* out, const std::vector<GoalResult>& goals,
                const BenchConfig& c) {
  fmt::print(out, "\nGoals for tickwheel, judged on this run's medians:\n");
  std::vector<std::string> differs = NonDefaultFlags(c);
#ifndef NDEBUG
  differs.push_back("not an optimised build");
#endif
  if (!differs.empty()) {
    fmt::print(out,
               "  (the goals are stated for the defaults; this run has {})\n",
               fmt::join(differs, " "));
  }
  size_t width = 0;
  for (const GoalResult& g : goals)
    width = std::max(width, GoalText(*g.goal).size());
  for (const GoalResult& g : goals) {
    const char* verdict = !g.met ? "n/a" : *g.met ? "MET" : "MISSED";
    fmt::print(out, "  {:<6}  {:<{}}  {}\n", verdict, GoalText(*g.goal), width,
               MeasuredText(g));
  }
}

// The JSON file (WriteJson).
std::string Str(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
  }
  return out + "\"";
}

std::string Num(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

// `items`, one per line, between `open` and its closing bracket.
std::string Block(char open, const std::vector<std::string>& items,
                  const std::string& indent) {
  const std::string in = indent + "  ";
  return fmt::format("{}{}{}\n{}{}", open, items.empty() ? "" : "\n" + in,
                     fmt::join(items, ",\n" + in), indent,
                     open == '{' ? '}' : ']');
}

std::string MetricJson(const Results& r, const Row& row) {
  std::vector<std::string> per_impl;
  for (const std::string& impl : r.impls()) {
    if (const auto s = r.Summarize(impl, row.key)) {
      std::vector<std::string> samples;
      for (double v : r.Samples(impl, row.key)) samples.push_back(Num(v));
      per_impl.push_back(fmt::format(
          "{}: {{\"median\": {}, \"min\": {}, \"max\": {}, \"samples\": [{}]}}",
          Str(impl), Num(s->median), Num(s->min), Num(s->max),
          fmt::join(samples, ", ")));
    }
  }
  const char* better[] = {"lower", "higher", "neither"};
  return fmt::format(
      "{{\"key\": {}, \"workload\": {}, \"label\": {}, \"unit\": {}, "
      "\"better\": {}, "
      "\"results\": {}}}",
      Str(row.key), Str(row.workload), Str(row.label), Str(row.unit),
      Str(better[static_cast<int>(row.better)]), Block('{', per_impl, "    "));
}

std::string GoalJson(const GoalResult& g) {
  const Goal& o = *g.goal;
  return fmt::format(
      "{{\"workload\": {}, \"metric\": {}, \"baseline\": {}, \"measure\": {}, "
      "\"comparison\": {}, \"bound\": {}, "
      "\"unit\": {}, \"name\": {}, \"reason\": {}, \"value\": {}, \"met\": "
      "{}}}",
      Str(o.workload), Str(o.metric), Str(o.baseline),
      Str(o.measure == Measure::kSpread ? "spread" : "median"),
      Str(o.at_most ? "<=" : ">="), o.bound, Str(o.unit), Str(o.name),
      Str(o.reason), g.value ? Num(*g.value) : "null",
      !g.met   ? "null"
      : *g.met ? "true"
               : "false");
}

}  // namespace

RunInfo CollectRunInfo() {
  RunInfo info;
  info.load_start = LoadAverage();
  info.memory = MemoryEnvironment();
  utsname u{};
  uname(&u);
  info.host = fmt::format("{} cores, {} {} {}", sysconf(_SC_NPROCESSORS_ONLN),
                          u.sysname, u.release, u.machine);
#ifdef __clang__
  info.compiler = __VERSION__;  // "Clang 14.0.6 ..."
#else
  info.compiler = fmt::format("gcc {}", __VERSION__);
#endif
#ifdef NDEBUG
  info.compiler += ", NDEBUG";
#else
  info.compiler += ", asserts on (not an optimised build?)";
#endif
  return info;
}

std::string PrimingText(const BenchConfig& c) {
  if (c.prime_mb <= 0) return "";
  return fmt::format(
      "memory primed: {} MiB before each run (lab mode, --prime_mb)",
      c.prime_mb);
}

void PrintReport(std::FILE* out, const Results& r,
                 const std::vector<GoalResult>& goals, const BenchConfig& c,
                 const RunInfo& info) {
  PrintHeader(out, c, info);
  PrintTable(out, r);
  PrintGoals(out, goals, c);
  if (!r.notes().empty())
    fmt::print(out, "\nNotes:\n  {}\n", fmt::join(r.notes(), "\n  "));
  fmt::print(out, "\nCorrectness checks: {}\n",
             r.failures().empty()
                 ? "all passed"
                 : fmt::format("{} FAILED", r.failures().size()));
  for (const Failure& f : r.failures()) {
    fmt::print(out, "  FAILED {}, {}, rep {}: {}\n", f.run, f.impl, f.rep,
               f.message);
  }
}

bool WriteMarkdown(const std::string& path, const Results& r,
                   const BenchConfig& c, const RunInfo& info) {
  std::ofstream out(path);
  out << fmt::format(
      "`{}`: {}; {}; load average {} at start, {} at end; median [min-max] "
      "of {}.\n\n",
      c.command_line, info.host, info.compiler, info.load_start, info.load_end,
      c.reps);
  const std::vector<std::vector<std::string>> rows = TableCells(r);
  for (size_t k = 0; k < rows.size(); ++k) {
    out << "| " << fmt::format("{}", fmt::join(rows[k], " | ")) << " |\n";
    if (k == 0) {
      std::string rule = "|";
      for (size_t i = 0; i < rows[0].size(); ++i) rule += "---|";
      out << rule << "\n";
    }
  }
  return static_cast<bool>(out.flush());
}

bool WriteJson(const std::string& path, const Results& r,
               const std::vector<GoalResult>& goals, const BenchConfig& c,
               const RunInfo& info) {
  std::vector<std::string> flags, metrics, goal_items, failures, notes;
  for (const auto& [name, value] : c.flags)
    flags.push_back(Str(name) + ": " + Str(value));
  for (const Row& row : r.rows()) metrics.push_back(MetricJson(r, row));
  for (const GoalResult& g : goals) goal_items.push_back(GoalJson(g));
  for (const Failure& f : r.failures()) {
    failures.push_back(fmt::format(
        "{{\"run\": {}, \"impl\": {}, \"rep\": {}, \"message\": {}}}",
        Str(f.run), Str(f.impl), f.rep, Str(f.message)));
  }
  for (const std::string& n : r.notes()) notes.push_back(Str(n));
  const std::string run = Block(
      '{',
      {"\"host\": " + Str(info.host), "\"compiler\": " + Str(info.compiler),
       "\"memory\": " + Str(info.memory),
       fmt::format("\"memory_primed_mib\": {}", c.prime_mb),
       "\"load_average_start\": " + Str(info.load_start),
       "\"load_average_end\": " + Str(info.load_end),
       "\"elapsed_s\": " + Num(info.elapsed_s),
       "\"command\": " + Str(c.command_line),
       "\"flags\": " + Block('{', flags, "    ")},
      "  ");
  std::ofstream out(path);
  out << Block('{',
               {"\"run\": " + run, "\"metrics\": " + Block('[', metrics, "  "),
                "\"goals\": " + Block('[', goal_items, "  "),
                "\"failures\": " + Block('[', failures, "  "),
                "\"notes\": " + Block('[', notes, "  ")},
               "")
      << "\n";
  return static_cast<bool>(out.flush());
}

}  // namespace tickwheel::bench
