// tools/bench/targets_issue6.cc
// -----------------------------------------------------------------------------
// The targets of issue #6 (targets.h lists them): one TargetResult per line
// of the report, T1 and T4 two each. Every line gives tickwheel's median
// [min-max] over the repetitions, and, where the heap model measured the
// same metric in this run, the heap's median and tickwheel / heap from the
// medians (for a ratio target such as T1's depth scaling or T7, the heap's
// own ratio and the ratio of the two).

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include <fmt/format.h>

#include "tools/bench/targets.h"

namespace tickwheel::bench {
namespace {

constexpr const char* kTw = "tickwheel";
constexpr const char* kHeap = "heap";

std::string Fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

// "1.20x", "35.2 ns/op".
std::string Unit(const std::string& number, const std::string& unit) {
  if (unit.empty()) return number;
  return unit == "x" ? number + unit : number + " " + unit;
}

// "35.2 [33.1-40.2] ns/op" (no brackets for a single repetition).
std::string Spread(const Summary& s, int decimals, const std::string& unit) {
  std::string out = Fixed(s.median, decimals);
  if (s.count > 1) {
    out += fmt::format(" [{}-{}]", Fixed(s.min, decimals), Fixed(s.max, decimals));
  }
  return Unit(out, unit);
}

// tickwheel / heap from the medians, as the table's tw/heap column.
std::string TwOverHeap(double tw, double heap) {
  if (heap == 0) return tw == 0 ? "1.00x" : "inf";
  return fmt::format("{:.2f}x", tw / heap);
}

struct Check {
  const char* id;
  std::string requirement;
  std::string key;     // the metric the verdict reads
  std::string unit;    // printed after the numbers
  int decimals;
  // The verdict on tickwheel's median.
  bool (*pass)(double median, double limit);
  double limit;
};

// 1000000 -> "1M", 1000 -> "1k", 1500 -> "1500": short enough for the
// requirement column.
std::string Count(int64_t n) {
  if (n >= 1000000 && n % 1000000 == 0) return fmt::format("{}M", n / 1000000);
  if (n >= 1000 && n % 1000 == 0) return fmt::format("{}k", n / 1000);
  return fmt::format("{}", n);
}

bool AtMost(double v, double limit) { return v <= limit; }
bool AtLeast(double v, double limit) { return v >= limit; }

// One target line: tickwheel's summary of check.key, the verdict on its
// median, `extra` (more of tickwheel's figures) and the heap's median and
// tw/heap.
TargetResult Evaluate(const Results& r, const Check& check,
                      const std::string& extra = "") {
  TargetResult t;
  t.issue = 6;
  t.id = check.id;
  t.requirement = check.requirement;
  t.key = check.key;
  t.unit = check.unit;
  t.tickwheel = r.Summarize(kTw, check.key);
  t.heap = r.Summarize(kHeap, check.key);
  if (!t.tickwheel) {
    t.measured = "not measured";
    return t;
  }
  t.met = check.pass(t.tickwheel->median, check.limit);
  t.measured = Spread(*t.tickwheel, check.decimals, check.unit);
  if (!extra.empty()) t.measured += fmt::format(" ({})", extra);
  if (t.heap) {
    t.measured += fmt::format("; heap {}, tw/heap {}",
                              Unit(Fixed(t.heap->median, check.decimals), check.unit),
                              TwOverHeap(t.tickwheel->median, t.heap->median));
  }
  return t;
}

// "caller CPU 30.1 ns/op" and the like, from tickwheel's median of `key`.
std::string Also(const Results& r, const std::string& key, const std::string& what,
                 int decimals, const std::string& unit) {
  auto s = r.Summarize(kTw, key);
  if (!s) return "";
  return fmt::format("{} {}", what, Unit(Fixed(s->median, decimals), unit));
}

std::string JoinNonEmpty(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : ", ") + p;
  }
  return out;
}

bool Has(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TargetResult NotMeasured(const char* id, std::string requirement) {
  TargetResult t;
  t.issue = 6;
  t.id = id;
  t.requirement = std::move(requirement);
  t.measured = "not measured";
  return t;
}

}  // namespace

std::vector<TargetResult> EvaluateIssue6Targets(const Results& r,
                                                const BenchConfig& c) {
  std::vector<TargetResult> out;

  // T1: W7 at the deepest depth, and deepest / shallowest.
  if (c.w7_depths.size() >= 2) {
    const int lo = c.w7_depths.front(), hi = c.w7_depths.back();
    out.push_back(Evaluate(
        r, {"T1 schedule, deep", fmt::format("<= 40 ns/op, D={} pending", Count(hi)),
            KeyW7NsPerOp(hi), "ns/op", 1, AtMost, 40},
        Also(r, KeyW7CpuNsPerOp(hi), "caller CPU", 1, "ns/op")));
    out.push_back(Evaluate(
        r, {"T1 depth scaling", fmt::format("D={} / D={} <= 1.5x", Count(hi), Count(lo)),
            kKeyW7Ratio, "x", 2, AtMost, 1.5},
        JoinNonEmpty({Also(r, KeyW7NsPerOp(lo), fmt::format("D={}", Count(lo)), 1, "ns/op"),
                      Also(r, kKeyW7CpuRatio, "caller CPU ratio", 2, "x")})));
  } else if (c.w7_depths.size() == 1) {
    const int d = c.w7_depths.front();
    out.push_back(Evaluate(
        r, {"T1 schedule, deep", fmt::format("<= 40 ns/op, D={} pending", Count(d)),
            KeyW7NsPerOp(d), "ns/op", 1, AtMost, 40},
        Also(r, KeyW7CpuNsPerOp(d), "caller CPU", 1, "ns/op")));
    out.push_back(NotMeasured("T1 depth scaling", "deep / shallow <= 1.5x"));
  }

  // T2: W2 with one producer.
  if (Has(c.producers, 1)) {
    out.push_back(Evaluate(r, {"T2 schedule+cancel", "<= 70 ns/pair, P=1",
                               KeyW2NsPerPair(1), "ns/pair", 1, AtMost, 70},
                           Also(r, KeyW2CpuNsPerPair(1), "caller CPU", 1, "ns/pair")));
  } else {
    out.push_back(NotMeasured("T2 schedule+cancel", "<= 70 ns/pair, P=1"));
  }

  // T3: W4.
  out.push_back(Evaluate(r, {"T3 memory", "<= 64 B per pending timeout",
                             kKeyW4Bytes, "B", 1, AtMost, 64}));

  // T4: W5 (one timeout an hour away) and W9 (N pending).
  out.push_back(Evaluate(r, {"T4 idle, 1 pending", "0 wake-ups/s, 1 h away",
                             kKeyW5Wakeups, "/s", 1, AtMost, 0},
                         Also(r, kKeyW5Cpu, "CPU", 3, "s")));
  out.push_back(Evaluate(
      r, {"T4 idle, N pending", fmt::format("<= 1% of a core, {} pending", Count(c.w9_n)),
          kKeyW9CpuPercent, "% core", 2, AtMost, 1},
      JoinNonEmpty({Also(r, kKeyW9Wakeups, "wake-ups", 1, "/s"),
                    Also(r, kKeyW9Window, "window", 1, "s")})));

  // T5: W8, same deadline with the recording task; beside it the counted
  // task's figure (the timer's own cost) and the same-delay variant.
  out.push_back(Evaluate(
      r, {"T5 burst accuracy", fmt::format("last of {} <= 10 ms late", Count(c.w8_n)),
          kKeyW8DeadlineLast, "ms", 1, AtMost, 10},
      JoinNonEmpty({Also(r, kKeyW8DeadlineP99, "p99", 1, "ms"),
                    Also(r, kKeyW8CountedLast, "counted task: last", 1, "ms"),
                    Also(r, kKeyW8DelayMax, "same delay: max", 1, "ms"),
                    Also(r, kKeyW8DelayP99, "p99", 1, "ms")})));

  // T6: W6 per worker CPU second.
  out.push_back(Evaluate(r, {"T6 mass expiry", ">= 20 M/s on the worker",
                             kKeyW6CpuRate, "M/s", 2, AtLeast, 20},
                         Also(r, kKeyW6Rate, "per wall s", 2, "M/s")));

  // T7: W1 throughput, P=2 over P=1.
  if (Has(c.producers, 1) && Has(c.producers, 2)) {
    out.push_back(Evaluate(
        r, {"T7 two producers", "throughput P=2 >= 1.5x P=1", KeyW1Scaling(2), "x",
            2, AtLeast, 1.5},
        JoinNonEmpty({Also(r, KeyW1Throughput(2), "P=2", 2, "M/s"),
                      Also(r, KeyW1Throughput(1), "P=1", 2, "M/s")})));
  } else {
    out.push_back(NotMeasured("T7 two producers", "throughput P=2 >= 1.5x P=1"));
  }
  return out;
}

std::vector<std::string> Issue6ConditionGaps(const BenchConfig& c) {
  std::vector<std::string> gaps;
#ifndef NDEBUG
  gaps.push_back("not an optimised build (asserts on; use -c opt)");
#endif
  if (c.reps < 5) gaps.push_back(fmt::format("R = {} (< 5)", c.reps));
  auto tick = [&](const char* flag, double ms, std::initializer_list<const char*> ws) {
    for (const char* w : ws) {
      if (c.Runs(w) && ms != 1) {
        gaps.push_back(fmt::format("--{}={:g} (not 1 ms)", flag, ms));
        return;
      }
    }
  };
  tick("tick_ms", c.tick_ms, {"W1", "W2", "W4", "W7"});
  tick("w5_tick_ms", c.w5_tick_ms, {"W5"});
  tick("w6_tick_ms", c.w6_tick_ms, {"W6"});
  tick("w8_tick_ms", c.w8_tick_ms, {"W8"});
  tick("w9_tick_ms", c.w9_tick_ms, {"W9"});
  if (c.Runs("W4") && c.w4_n != 1000000) {
    gaps.push_back(fmt::format("--w4_n={} (not 1000000)", c.w4_n));
  }
  if (c.Runs("W7") &&
      (c.w7_depths.front() != 1000 || c.w7_depths.back() != 1000000)) {
    gaps.push_back(fmt::format("--w7_depths={} (not 1000,1000000)",
                               fmt::join(c.w7_depths, ",")));
  }
  if (c.Runs("W8") && c.w8_n != 1000000) {
    gaps.push_back(fmt::format("--w8_n={} (not 1000000)", c.w8_n));
  }
  if (c.Runs("W9") && c.w9_n != 1000000) {
    gaps.push_back(fmt::format("--w9_n={} (not 1000000)", c.w9_n));
  }
  if ((c.Runs("W7") || c.Runs("W9")) && (c.far_min_s != 10 || c.far_max_s != 60)) {
    gaps.push_back(fmt::format("delays {:g}-{:g} s (not 10-60 s)", c.far_min_s,
                               c.far_max_s));
  }
  if ((c.Runs("W1") || c.Runs("W2")) && (!Has(c.producers, 1) || !Has(c.producers, 2))) {
    gaps.push_back(fmt::format("--producers={} (T2 needs 1, T7 needs 1 and 2)",
                               fmt::join(c.producers, ",")));
  }
  return gaps;
}

}  // namespace tickwheel::bench
