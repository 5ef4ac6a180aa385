#include "tools/bench/json_report.h"

#include <cmath>
#include <fstream>
#include <optional>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

std::string Str(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string Num(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
}

std::string NumList(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Num(v[i]);
  return out + "]";
}

const char* BetterName(Better b) {
  return b == Better::kLower ? "lower" : b == Better::kHigher ? "higher" : "neither";
}

// Joins already-rendered members/elements with commas.
std::string Join(const std::vector<std::string>& parts, const std::string& indent) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += indent + parts[i] + (i + 1 < parts.size() ? ",\n" : "\n");
  }
  return out;
}

}  // namespace

bool WriteJson(const std::string& path, const Results& r,
               const std::vector<TargetResult>& targets, const BenchConfig& c,
               const RunInfo& info, std::string& error) {
  std::vector<std::string> config = {
      fmt::format("\"reps\": {}", c.reps),
      fmt::format("\"producers\": [{}]", fmt::join(c.producers, ", ")),
      fmt::format("\"seed\": {}", c.seed),
      fmt::format("\"isolate\": {}", c.isolate ? "true" : "false"),
      fmt::format("\"prime_mb\": {}", c.prime_mb),
      fmt::format("\"tick_ms\": {}", c.tick_ms),
      fmt::format("\"ticks_per_wheel\": {}", c.ticks_per_wheel),
      fmt::format("\"far_delay_s\": [{}, {}]", c.far_min_s, c.far_max_s),
      fmt::format("\"w1_n\": {}", c.w1_n), fmt::format("\"w2_n\": {}", c.w2_n),
      fmt::format("\"w4_n\": {}", c.w4_n),
      fmt::format("\"w3\": {{\"tick_ms\": {}, \"k\": {}, \"delay_ms\": [{}, {}]}}",
                  c.w3_tick_ms, c.w3_k, c.w3_min_ms, c.w3_max_ms),
      fmt::format("\"w5\": {{\"tick_ms\": {}, \"idle_s\": {}}}", c.w5_tick_ms,
                  c.w5_idle_s),
      fmt::format("\"w6\": {{\"tick_ms\": {}, \"n\": {}, \"window_ms\": {}, "
                  "\"lead_ms\": {}}}",
                  c.w6_tick_ms, c.w6_n, c.w6_window_ms, c.w6_lead_ms),
      fmt::format("\"w7\": {{\"tick_ms\": {}, \"depths\": [{}], \"m\": {}}}",
                  c.tick_ms, fmt::join(c.w7_depths, ", "), c.w7_m),
      fmt::format("\"w8\": {{\"tick_ms\": {}, \"n\": {}, \"lead_ms\": {}, "
                  "\"delay_ms\": {}}}",
                  c.w8_tick_ms, c.w8_n, c.w8_lead_ms, c.w8_delay_ms),
      fmt::format("\"w9\": {{\"tick_ms\": {}, \"n\": {}, \"settle_s\": {}, "
                  "\"idle_s\": {}}}",
                  c.w9_tick_ms, c.w9_n, c.w9_settle_s, c.w9_idle_s),
  };
  std::vector<std::string> run = {
      "\"date\": " + Str(info.date), "\"host\": " + Str(info.host),
      "\"compiler\": " + Str(info.compiler), "\"command\": " + Str(c.command_line),
      "\"elapsed_s\": " + Num(info.elapsed_s),
      "\"load_average_start\": " + Str(info.load_start),
      "\"load_average_end\": " + Str(info.load_end),
      "\"memory\": " + Str(info.memory),
      "\"config\": {\n" + Join(config, "      ") + "    }"};

  std::vector<std::string> metrics;
  for (const MetricDef& d : r.defs()) {
    std::vector<std::string> per_impl;
    for (const std::string& impl : r.impls()) {
      auto s = r.Summarize(impl, d.key);
      if (!s) continue;
      per_impl.push_back(fmt::format(
          "{}: {{\"median\": {}, \"min\": {}, \"max\": {}, \"samples\": {}}}",
          Str(impl), Num(s->median), Num(s->min), Num(s->max),
          NumList(r.Samples(impl, d.key))));
    }
    metrics.push_back(fmt::format(
        "{{\"key\": {}, \"workload\": {}, \"label\": {}, \"unit\": {}, "
        "\"better\": {}, \"results\": {{\n{}      }}}}",
        Str(d.key), Str(d.workload), Str(d.label), Str(d.unit),
        Str(BetterName(d.better)), Join(per_impl, "        ")));
  }

  auto summary = [](const std::optional<Summary>& s) {
    if (!s) return std::string("null");
    return fmt::format("{{\"median\": {}, \"min\": {}, \"max\": {}}}",
                       Num(s->median), Num(s->min), Num(s->max));
  };
  std::vector<std::string> target_items;
  for (const TargetResult& t : targets) {
    std::string item = fmt::format(
        "{{\"issue\": {}, \"id\": {}, \"requirement\": {}, \"measured\": {}, "
        "\"met\": {}",
        t.issue, Str(t.id), Str(t.requirement), Str(t.measured),
        !t.met ? "null" : (*t.met ? "true" : "false"));
    if (!t.key.empty()) {
      std::string ratio = "null";
      if (t.tickwheel && t.heap && t.heap->median != 0) {
        ratio = Num(t.tickwheel->median / t.heap->median);
      }
      item += fmt::format(
          ", \"key\": {}, \"unit\": {}, \"tickwheel\": {}, \"heap\": {}, "
          "\"tw_over_heap\": {}",
          Str(t.key), Str(t.unit), summary(t.tickwheel), summary(t.heap), ratio);
    }
    target_items.push_back(item + "}");
  }
  std::vector<std::string> gaps;
  for (const std::string& g : Issue6ConditionGaps(c)) gaps.push_back(Str(g));

  std::vector<std::string> lateness;
  for (const std::string& impl : r.impls()) {
    const std::vector<double> v = r.Lateness(impl);
    if (v.empty()) continue;
    lateness.push_back(fmt::format(
        "{}: {{\"p50\": {}, \"p90\": {}, \"p99\": {}, \"p999\": {}, \"max\": "
        "{}, \"count\": {}}}",
        Str(impl), Num(Quantile(v, 0.5)), Num(Quantile(v, 0.9)),
        Num(Quantile(v, 0.99)), Num(Quantile(v, 0.999)), Num(v.back()), v.size()));
  }

  std::vector<std::string> counters;
  for (const auto& [name, map] : r.counters()) {
    std::vector<std::string> items;
    for (const auto& [k, v] : map) items.push_back(Str(k) + ": " + Num(v));
    counters.push_back(fmt::format("{}: {{{}}}", Str(name), fmt::join(items, ", ")));
  }

  std::vector<std::string> failures;
  for (const Failure& f : r.failures()) {
    failures.push_back(fmt::format(
        "{{\"workload\": {}, \"impl\": {}, \"rep\": {}, \"message\": {}}}",
        Str(f.workload), Str(f.impl), f.rep, Str(f.message)));
  }
  std::vector<std::string> notes;
  for (const std::string& n : r.notes()) notes.push_back(Str(n));

  std::vector<std::string> top = {
      "\"run\": {\n" + Join(run, "    ") + "  }",
      "\"metrics\": [\n" + Join(metrics, "    ") + "  ]",
      "\"targets\": [\n" + Join(target_items, "    ") + "  ]",
      "\"issue6_condition_gaps\": [\n" + Join(gaps, "    ") + "  ]",
      "\"w3_lateness_us\": {\n" + Join(lateness, "    ") + "  }",
      "\"counters\": {\n" + Join(counters, "    ") + "  }",
      "\"failures\": [\n" + Join(failures, "    ") + "  ]",
      "\"notes\": [\n" + Join(notes, "    ") + "  ]",
  };
  std::ofstream out(path);
  out << "{\n" << Join(top, "  ") << "}\n";
  out.close();
  if (!out) {
    error = fmt::format("cannot write {}", path);
    return false;
  }
  return true;
}

}  // namespace tickwheel::bench
