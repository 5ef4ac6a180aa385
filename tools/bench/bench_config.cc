#include "tools/bench/bench_config.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

struct Flag {
  const char *name, *value, *help;  // value: the default
};

const Flag kFlags[] = {
    {"reps", "5", "repetitions of each run"},
    {"only", "", "comma-separated workloads to run; empty: all"},
    {"impls", "tickwheel,asio,heap,libuv,libevent,netty",
     "comma-separated timers to run"},
    {"seed", "42", "seed of the random delays"},
    {"warmup", "10000",
     "timeouts run and cancelled on a throwaway timer before each run"},
    {"tick_ms", "1",
     "tickwheel's tick in lateness, idle, mass_expiry, burst and "
     "owner_mass_expiry"},
    {"n", "1000000",
     "timeouts per run of schedule, schedule_cancel, memory, release, idle, "
     "mass_expiry, burst, owner_schedule_cancel, owner_mass_expiry"},
    {"producers", "1,2",
     "producer threads of schedule and schedule_cancel, a run each"},
    {"depth_pending", "1000,1000000",
     "timeouts pending in schedule_depth, a run each"},
    {"isolate", "1",
     "1: each run in a fresh child process; 0: all in this one"},
    {"prime_mb", "0",
     "LAB MODE: MiB touched and freed before each child, so that it finds "
     "host-backed pages on a VM, and netty's JVM touches its heap at start "
     "(-XX:+AlwaysPreTouch); 0: off, as for a user's process"},
    {"quick", "0",
     "1: tiny sizes and short waits, to check the program, not to measure it"},
    {"netty_jar", "/usr/share/java/netty-common.jar",
     "the jar that holds Netty's io.netty.util.HashedWheelTimer (Debian's "
     "libnetty-java); the netty timer runs in a JVM (java and javac on PATH)"},
    {"json", "", "write the results to this file as JSON"},
    {"markdown", "", "write the table to this file as a Markdown table"},
};

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> out;
  for (size_t start = 0, comma = 0; comma != s.npos; start = comma + 1) {
    comma = s.find(',', start);
    if (start < s.size() && comma != start)
      out.emplace_back(s.substr(start, comma - start));
  }
  return out;
}

// Parses `s` into `out`; false unless it is a number >= `min`.
template <typename T>
bool Number(std::string_view s, T& out, T min) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= min;
}

// Fills the typed fields from c.flags; "" or the first bad flag's message.
std::string Convert(BenchConfig& c) {
  std::string err;
  for (const auto& [name, text] : c.flags) {
    const auto num = [&](auto& out, auto min) {
      if (!Number(std::string_view(text), out, min))
        err = fmt::format("bad --{}={}", name, text);
    };
    const auto counts = [&](std::vector<int64_t>& out) {
      out.clear();
      for (const std::string& item : Split(text)) {
        if (!Number(std::string_view(item), out.emplace_back(), int64_t{1}))
          out.clear();
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      if (out.empty() || out.size() != Split(text).size())
        err = fmt::format("bad --{}={}", name, text);
    };
    if (name == "reps") num(c.reps, int64_t{1});
    if (name == "seed") num(c.seed, int64_t{0});
    if (name == "warmup") num(c.warmup, int64_t{0});
    if (name == "tick_ms") num(c.tick_ms, 1e-6);
    if (name == "n") num(c.n, int64_t{1});
    if (name == "prime_mb") num(c.prime_mb, int64_t{0});
    if (name == "producers") counts(c.producers);
    if (name == "depth_pending") counts(c.depth_pending);
    if (name == "isolate" || name == "quick") {
      if (text != "0" && text != "1") err = fmt::format("--{} is 0 or 1", name);
      (name == "quick" ? c.quick : c.isolate) = text == "1";
    }
    if (name == "only") c.only = Split(text);
    if (name == "impls") c.impls = Split(text);
    if (name == "json") c.json_path = text;
    if (name == "markdown") c.markdown_path = text;
    if (name == "netty_jar") c.netty_jar = text;
  }
  for (const std::string& i : c.impls) {
    if (std::find(std::begin(kTimers), std::end(kTimers), i) ==
        std::end(kTimers))
      err = "unknown timer " + i;
  }
  return err;
}

void ApplyQuick(BenchConfig& c) {
  c.n = std::min<int64_t>(c.n, 3000);
  c.depth_pending = {100, 3000};
  c.depth_calls = 2000, c.lateness_n = 300, c.coro_requests = 2000;
  c.lateness_min_ms = 1, c.lateness_max_ms = 40;
  c.idle_settle_s = 0.1, c.idle_s = 0.2;
  c.release_wait_s = 0.1;
  c.mass_expiry_window_ms = 20, c.mass_expiry_lead_ms = 300;
  c.burst_lead_ms = 200, c.burst_delay_ms = 20;
}

}  // namespace

bool BenchConfig::Runs(const std::string& w) const {
  return only.empty() || std::find(only.begin(), only.end(), w) != only.end();
}
bool BenchConfig::Uses(const std::string& i) const {
  return std::find(impls.begin(), impls.end(), i) != impls.end();
}

std::string ParseFlags(int argc, char** argv, BenchConfig& c) {
  c.command_line = argv[0];
  for (const Flag& f : kFlags) c.flags.emplace_back(f.name, f.value);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    c.command_line += fmt::format(" {}", arg);
    if (arg == "--help" || arg == "-h") return "help";
    const size_t eq = arg.find('=');
    const std::string_view name =
        arg.substr(2, eq == arg.npos ? arg.npos : eq - 2);
    const auto flag =
        std::find_if(c.flags.begin(), c.flags.end(),
                     [&](const auto& f) { return f.first == name; });
    if (!arg.starts_with("--") || flag == c.flags.end())
      return fmt::format("unknown flag {}", arg);
    if (eq == arg.npos && i + 1 == argc)
      return fmt::format("--{} needs a value", name);
    flag->second = eq == arg.npos ? argv[++i] : arg.substr(eq + 1);
    if (eq == arg.npos) c.command_line += fmt::format(" {}", flag->second);
  }
  std::string err = Convert(c);
  if (c.quick) ApplyQuick(c);
  return err;
}

std::string Usage() {
  std::string out =
      "Usage: bench [--flag=value ...]\n"
      "Runs each workload on tickwheel, Boost.Asio, a heap timer thread, "
      "libuv,\n"
      "libevent and Netty's HashedWheelTimer, R times in turns, and prints "
      "median\n"
      "[min-max] per timer and the goals' verdicts.\n\n";
  for (const Flag& f : kFlags) {
    out += fmt::format("  --{:<14} {}{}\n", f.name, f.help,
                       *f.value ? fmt::format(" (default: {})", f.value) : "");
  }
  return out;
}

std::vector<std::string> NonDefaultFlags(const BenchConfig& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.flags.size(); ++i) {
    const auto& [name, text] = c.flags[i];
    if (name != "only" && name != "impls" && name != "seed" && name != "json" &&
        name != "markdown" && text != kFlags[i].value) {
      out.push_back(fmt::format("--{}={}", name, text));
    }
  }
  return out;
}

}  // namespace tickwheel::bench
