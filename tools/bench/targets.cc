#include "tools/bench/targets.h"

#include <utility>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

constexpr const char* kTw = "tickwheel";

// A target of issue #3, "not measured" until its inputs are found.
TargetResult Unmeasured(std::string id, std::string requirement) {
  TargetResult t;
  t.id = std::move(id);
  t.requirement = std::move(requirement);
  t.measured = "not measured";
  return t;
}

// "tickwheel is at least `factor` times faster than `other`" on `key`.
// The verdict uses `key` (wall time per call, what a caller waits); the
// caller-CPU ratio from `cpu_key` is printed beside it.
TargetResult Faster(const Results& r, const std::string& key,
                    const std::string& cpu_key, const std::string& id, const std::string& other,
                    double factor, const std::string& unit) {
  TargetResult t;
  t.id = fmt::format("{} vs {}", id, other);
  t.requirement = factor > 1 ? fmt::format(">= {:.0f}x faster than {}", factor, other)
                             : fmt::format("faster than {}", other);
  auto tw = r.Summarize(kTw, key);
  auto o = r.Summarize(other, key);
  if (!tw || !o || tw->median <= 0) {
    t.measured = "not measured";
    return t;
  }
  const double speedup = o->median / tw->median;
  t.measured = fmt::format("{}/tickwheel = {:.2f}x ({:.1f} vs {:.1f} {} wall)",
                           other, speedup, tw->median, o->median, unit);
  auto tw_cpu = r.Summarize(kTw, cpu_key);
  auto o_cpu = r.Summarize(other, cpu_key);
  if (tw_cpu && o_cpu && tw_cpu->median > 0) {
    t.measured += fmt::format("; caller CPU {:.2f}x", o_cpu->median / tw_cpu->median);
  }
  t.met = factor > 1 ? speedup >= factor : speedup > 1;
  return t;
}

}  // namespace

std::vector<TargetResult> EvaluateTargets(const Results& r,
                                          const BenchConfig& c) {
  std::vector<TargetResult> out;
  for (int p : c.producers) {
    const std::string id = fmt::format("W1 P={}", p);
    out.push_back(Faster(r, KeyW1NsPerOp(p), KeyW1CpuNsPerOp(p), id, "heap", 3, "ns/op"));
    out.push_back(Faster(r, KeyW1NsPerOp(p), KeyW1CpuNsPerOp(p), id, "asio", 1, "ns/op"));
  }
  for (int p : c.producers) {
    const std::string id = fmt::format("W2 P={}", p);
    out.push_back(Faster(r, KeyW2NsPerPair(p), KeyW2CpuNsPerPair(p), id, "heap", 3, "ns/pair"));
    out.push_back(Faster(r, KeyW2NsPerPair(p), KeyW2CpuNsPerPair(p), id, "asio", 1, "ns/pair"));
  }
  {
    TargetResult t = Unmeasured("W3 early fires", "0 in every repetition");
    const std::vector<double>& early = r.Samples(kTw, kKeyW3Early);
    if (!early.empty()) {
      double total = 0;
      for (double e : early) total += e;
      t.measured = fmt::format("{:.0f} over {} repetitions", total, early.size());
      t.met = total == 0;
    }
    out.push_back(t);
  }
  {
    const double limit_us = (c.w3_tick_ms + 2) * 1e3;
    TargetResult t = Unmeasured(
        "W3 p99 lateness", fmt::format("<= tick + 2 ms = {:.0f} us", limit_us));
    if (auto s = r.Summarize(kTw, kKeyW3P99)) {
      t.measured = fmt::format("{:.0f} us (reps {:.0f}-{:.0f})", s->median,
                               s->min, s->max);
      t.met = s->median <= limit_us;
    }
    out.push_back(t);
  }
  {
    TargetResult t = Unmeasured("W4 memory", "<= 96 B per pending timeout");
    if (auto s = r.Summarize(kTw, kKeyW4Bytes)) {
      t.measured = fmt::format("{:.1f} B (reps {:.1f}-{:.1f})", s->median,
                               s->min, s->max);
      t.met = s->median <= 96;
    }
    out.push_back(t);
  }
  {
    TargetResult t = Unmeasured("W6 expiry rate", ">= 5 M/s on the worker");
    if (auto s = r.Summarize(kTw, kKeyW6CpuRate)) {
      auto wall = r.Summarize(kTw, kKeyW6Rate);
      t.measured = fmt::format(
          "{:.2f} M per worker CPU s (reps {:.2f}-{:.2f}); {:.2f} M per wall s",
          s->median, s->min, s->max, wall ? wall->median : 0.0);
      t.met = s->median >= 5;
    }
    out.push_back(t);
  }
  for (TargetResult& t : EvaluateIssue6Targets(r, c)) out.push_back(std::move(t));
  return out;
}

}  // namespace tickwheel::bench
