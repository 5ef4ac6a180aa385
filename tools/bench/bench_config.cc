#include "tools/bench/bench_config.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <string_view>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

struct Flag {
  const char* name;
  const char* help;
  // Parses the value into the config; false if malformed.
  std::function<bool(std::string_view, BenchConfig&)> set;
  std::function<std::string(const BenchConfig&)> get;
};

template <typename T>
bool ParseNumber(std::string_view s, T& out) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  out = v;
  return true;
}

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// A flag bound to one numeric field, positive unless `allow_zero`.
template <typename T>
Flag Number(const char* name, const char* help, T BenchConfig::*field,
            bool allow_zero = false) {
  return Flag{
      name, help,
      [field, allow_zero](std::string_view s, BenchConfig& c) {
        T v{};
        if (!ParseNumber(s, v) || v < 0 || (v == 0 && !allow_zero)) return false;
        c.*field = v;
        return true;
      },
      [field](const BenchConfig& c) { return fmt::format("{}", c.*field); }};
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      Number("reps", "repetitions R of each workload", &BenchConfig::reps),
      {"only", "comma-separated workloads to run (W1..W9); default all",
       [](std::string_view s, BenchConfig& c) {
         c.only = SplitList(s);
         for (std::string& w : c.only) {
           std::transform(w.begin(), w.end(), w.begin(), ::toupper);
           if (w.size() != 2 || w[0] != 'W' || w[1] < '1' || w[1] > '9') return false;
         }
         return true;
       },
       [](const BenchConfig& c) { return fmt::format("{}", fmt::join(c.only, ",")); }},
      {"impls", "comma-separated implementations (tickwheel,asio,heap)",
       [](std::string_view s, BenchConfig& c) {
         c.impls = SplitList(s);
         for (const std::string& i : c.impls) {
           if (i != "tickwheel" && i != "asio" && i != "heap") return false;
         }
         return !c.impls.empty();
       },
       [](const BenchConfig& c) { return fmt::format("{}", fmt::join(c.impls, ",")); }},
      {"producers", "comma-separated producer thread counts for W1 and W2",
       [](std::string_view s, BenchConfig& c) {
         c.producers.clear();
         for (const std::string& p : SplitList(s)) {
           int v = 0;
           if (!ParseNumber(std::string_view(p), v) || v <= 0) return false;
           c.producers.push_back(v);
         }
         return !c.producers.empty();
       },
       [](const BenchConfig& c) { return fmt::format("{}", fmt::join(c.producers, ",")); }},
      Number("seed", "seed of the random delays", &BenchConfig::seed, true),
      {"n", "sets w1_n, w2_n, w4_n, w6_n, w8_n and w9_n at once",
       [](std::string_view s, BenchConfig& c) {
         int64_t v = 0;
         if (!ParseNumber(s, v) || v <= 0) return false;
         c.w1_n = c.w2_n = c.w4_n = c.w6_n = c.w8_n = c.w9_n = v;
         return true;
       },
       [](const BenchConfig&) { return std::string("-"); }},
      Number("tick_ms", "tickwheel tick for W1, W2, W4, W7 (ms)", &BenchConfig::tick_ms),
      Number("ticks_per_wheel", "tickwheel wheel size", &BenchConfig::ticks_per_wheel),
      Number("far_min_s", "W1/W2/W4/W7/W9 delays: minimum (s)", &BenchConfig::far_min_s),
      Number("far_max_s", "W1/W2/W4/W7/W9 delays: maximum (s)", &BenchConfig::far_max_s),
      Number("w1_n", "W1: timeouts per run, over all producers", &BenchConfig::w1_n),
      Number("w2_n", "W2: schedule+cancel pairs per run", &BenchConfig::w2_n),
      Number("w4_n", "W4: pending timeouts", &BenchConfig::w4_n),
      Number("w3_tick_ms", "W3: tickwheel tick (ms)", &BenchConfig::w3_tick_ms),
      Number("w3_k", "W3: timeouts", &BenchConfig::w3_k),
      Number("w3_min_ms", "W3: minimum delay (ms)", &BenchConfig::w3_min_ms),
      Number("w3_max_ms", "W3: maximum delay (ms)", &BenchConfig::w3_max_ms),
      Number("w5_tick_ms", "W5: tickwheel tick (ms)", &BenchConfig::w5_tick_ms),
      Number("w5_idle_s", "W5: idle time measured (s)", &BenchConfig::w5_idle_s),
      Number("w6_tick_ms", "W6: tickwheel tick (ms)", &BenchConfig::w6_tick_ms),
      Number("w6_n", "W6: timeouts", &BenchConfig::w6_n),
      Number("w6_window_ms", "W6: width of the window they are due in (ms)",
             &BenchConfig::w6_window_ms),
      Number("w6_lead_ms", "W6: from the first schedule to the window (ms)",
             &BenchConfig::w6_lead_ms),
      {"w7_depths", "W7: comma-separated pending depths D, one run each",
       [](std::string_view s, BenchConfig& c) {
         c.w7_depths.clear();
         for (const std::string& d : SplitList(s)) {
           int v = 0;
           if (!ParseNumber(std::string_view(d), v) || v <= 0) return false;
           c.w7_depths.push_back(v);
         }
         std::sort(c.w7_depths.begin(), c.w7_depths.end());
         c.w7_depths.erase(std::unique(c.w7_depths.begin(), c.w7_depths.end()),
                           c.w7_depths.end());
         return !c.w7_depths.empty();
       },
       [](const BenchConfig& c) { return fmt::format("{}", fmt::join(c.w7_depths, ",")); }},
      Number("w7_m", "W7: timed schedules on top of the D pending", &BenchConfig::w7_m),
      Number("w8_tick_ms", "W8: tickwheel tick (ms)", &BenchConfig::w8_tick_ms),
      Number("w8_n", "W8: timeouts in the burst", &BenchConfig::w8_n),
      Number("w8_lead_ms", "W8 same deadline: from the first schedule to the deadline (ms)",
             &BenchConfig::w8_lead_ms),
      Number("w8_delay_ms", "W8 same delay: the delay of every call (ms)",
             &BenchConfig::w8_delay_ms),
      Number("w9_tick_ms", "W9: tickwheel tick (ms)", &BenchConfig::w9_tick_ms),
      Number("w9_n", "W9: pending timeouts", &BenchConfig::w9_n),
      Number("w9_settle_s", "W9: settling time after all are armed (s)",
             &BenchConfig::w9_settle_s, true),
      Number("w9_idle_s", "W9: idle time measured, at most (s)", &BenchConfig::w9_idle_s),
      {"isolate", "1: each run in a fresh child process; 0: all in this one",
       [](std::string_view s, BenchConfig& c) {
         if (s != "0" && s != "1") return false;
         c.isolate = s == "1";
         return true;
       },
       [](const BenchConfig& c) { return std::string(c.isolate ? "1" : "0"); }},
      Number("prime_mb",
             "MiB touched and released before each child process, so that "
             "its fresh memory is host-backed on a VM (0: off)",
             &BenchConfig::prime_mb, true),
      {"child", "internal: run one workload in this process and print it",
       [](std::string_view s, BenchConfig& c) { c.child = s; return !s.empty(); },
       [](const BenchConfig&) { return std::string("-"); }},
      {"json", "write machine-readable results to FILE",
       [](std::string_view s, BenchConfig& c) { c.json_path = s; return !s.empty(); },
       [](const BenchConfig& c) { return c.json_path; }},
      {"svg", "write the W3 lateness CDF picture to FILE",
       [](std::string_view s, BenchConfig& c) { c.svg_path = s; return !s.empty(); },
       [](const BenchConfig& c) { return c.svg_path; }},
  };
  return flags;
}

}  // namespace

bool BenchConfig::Runs(const std::string& workload) const {
  return only.empty() ||
         std::find(only.begin(), only.end(), workload) != only.end();
}

bool BenchConfig::Uses(const std::string& impl) const {
  return std::find(impls.begin(), impls.end(), impl) != impls.end();
}

std::string ParseFlags(int argc, char** argv, BenchConfig& config) {
  config.command_line = argv[0];
  config.args.clear();
  for (int i = 1; i < argc; ++i) {
    config.command_line += fmt::format(" {}", argv[i]);
    config.args.emplace_back(argv[i]);
  }
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return "help";
    if (arg.substr(0, 2) != "--") return fmt::format("unexpected argument '{}'", arg);
    arg.remove_prefix(2);
    std::string_view name = arg, value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const auto& flags = Flags();
    auto it = std::find_if(flags.begin(), flags.end(),
                           [&](const Flag& f) { return name == f.name; });
    if (it == flags.end()) return fmt::format("unknown flag --{}", name);
    if (!has_value) {
      if (i + 1 >= argc) return fmt::format("flag --{} needs a value", name);
      value = argv[++i];
    }
    if (!it->set(value, config)) {
      return fmt::format("bad value '{}' for --{} ({})", value, name, it->help);
    }
  }
  if (config.far_min_s > config.far_max_s || config.w3_min_ms > config.w3_max_ms) {
    return "a minimum delay exceeds its maximum";
  }
  return "";
}

std::string Usage() {
  std::string out =
      "Usage: bench [--flag=value ...]\n"
      "Runs workloads W1..W9 against tickwheel, Boost.Asio and a heap timer\n"
      "thread, R times each, and prints median [min-max] per implementation.\n\n";
  const BenchConfig defaults;
  for (const Flag& f : Flags()) {
    out += fmt::format("  --{:<16} {} (default: {})\n", f.name, f.help,
                       f.get(defaults));
  }
  return out;
}

}  // namespace tickwheel::bench
