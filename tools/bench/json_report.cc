#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "tools/bench/report.h"

namespace tickwheel::bench {
namespace {

std::string Str(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
  }
  return out + "\"";
}

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// `items`, one per line, between `open` and its closing bracket.
std::string Block(char open, const std::vector<std::string>& items, const std::string& indent) {
  const std::string in = indent + "  ";
  return fmt::format("{}{}{}\n{}{}", open, items.empty() ? "" : "\n" + in,
                     fmt::join(items, ",\n" + in), indent, open == '{' ? '}' : ']');
}

std::string MetricJson(const Results& r, const Row& row) {
  std::vector<std::string> per_impl;
  for (const std::string& impl : r.impls()) {
    if (const auto s = r.Summarize(impl, row.key)) {
      std::vector<std::string> samples;
      for (double v : r.Samples(impl, row.key)) samples.push_back(Num(v));
      per_impl.push_back(fmt::format(
          "{}: {{\"median\": {}, \"min\": {}, \"max\": {}, \"samples\": [{}]}}", Str(impl),
          Num(s->median), Num(s->min), Num(s->max), fmt::join(samples, ", ")));
    }
  }
  const char* better[] = {"lower", "higher", "neither"};
  return fmt::format(
      "{{\"key\": {}, \"workload\": {}, \"label\": {}, \"unit\": {}, \"better\": {}, "
      "\"results\": {}}}",
      Str(row.key), Str(row.workload), Str(row.label), Str(row.unit),
      Str(better[static_cast<int>(row.better)]), Block('{', per_impl, "    "));
}

std::string GoalJson(const GoalResult& g) {
  const Goal& o = *g.goal;
  return fmt::format(
      "{{\"workload\": {}, \"metric\": {}, \"baseline\": {}, \"comparison\": {}, \"bound\": {}, "
      "\"unit\": {}, \"name\": {}, \"reason\": {}, \"value\": {}, \"met\": {}}}",
      Str(o.workload), Str(o.metric), Str(o.baseline), Str(o.at_most ? "<=" : ">="), o.bound,
      Str(o.unit), Str(o.name), Str(o.reason), g.value ? Num(*g.value) : "null",
      !g.met   ? "null"
      : *g.met ? "true"
               : "false");
}

}  // namespace

bool WriteJson(const std::string& path, const Results& r, const std::vector<GoalResult>& goals,
               const BenchConfig& c, const RunInfo& info) {
  std::vector<std::string> flags, metrics, goal_items, failures, notes;
  for (const auto& [name, value] : c.flags) flags.push_back(Str(name) + ": " + Str(value));
  for (const Row& row : r.rows()) metrics.push_back(MetricJson(r, row));
  for (const GoalResult& g : goals) goal_items.push_back(GoalJson(g));
  for (const Failure& f : r.failures()) {
    failures.push_back(fmt::format("{{\"run\": {}, \"impl\": {}, \"rep\": {}, \"message\": {}}}",
                                   Str(f.run), Str(f.impl), f.rep, Str(f.message)));
  }
  for (const std::string& n : r.notes()) notes.push_back(Str(n));
  const std::string run = Block(
      '{',
      {"\"host\": " + Str(info.host), "\"compiler\": " + Str(info.compiler),
       "\"memory\": " + Str(info.memory), fmt::format("\"memory_primed_mib\": {}", c.prime_mb),
       "\"load_average_start\": " + Str(info.load_start),
       "\"load_average_end\": " + Str(info.load_end), "\"elapsed_s\": " + Num(info.elapsed_s),
       "\"command\": " + Str(c.command_line), "\"flags\": " + Block('{', flags, "    ")},
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
