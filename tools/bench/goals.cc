#include "tools/bench/goals.h"

#include <cmath>

#include <fmt/format.h>

namespace tickwheel::bench {

// Over 60 lines on purpose: a data table, one goal per entry, read whole.
const std::vector<Goal>& Goals() {
  constexpr bool kAtMost = true, kAtLeast = false;
  static const std::vector<Goal> goals = {
      {"schedule_depth", "pending1000000.ns_per_call", "", kAtMost, 40, "ns",
       "schedule, 1M pending: ns per call",
       "a call costs little more than what it cannot avoid: a clock read, two "
       "atomics, a node"},
      {"schedule_depth", "pending1000000_over_pending1000.ns_per_call", "",
       kAtMost, 1.5, "x", "schedule, 1M / 1k pending: ns per call",
       "a call does not slow down as the timer fills"},
      {"schedule", "p2_over_p1.throughput_mps", "", kAtLeast, 1.5, "x",
       "schedule, 2 / 1 producer: throughput",
       "a second producer adds throughput"},
      {"schedule", "p1.ns_per_call", "heap", kAtLeast, 3, "x",
       "schedule, 1 producer: heap / tickwheel ns per call",
       "worth a dependency: well ahead of the timer thread people write by "
       "hand"},
      {"schedule", "p2.ns_per_call", "heap", kAtLeast, 3, "x",
       "schedule, 2 producers: heap / tickwheel ns per call",
       "the same, two threads at once"},
      {"schedule", "p1.ns_per_call", "asio", kAtLeast, 1, "x",
       "schedule, 1 producer: asio / tickwheel ns per call",
       "cheaper than Boost.Asio's steady_timer, the usual library choice"},
      {"schedule", "p2.ns_per_call", "asio", kAtLeast, 1, "x",
       "schedule, 2 producers: asio / tickwheel ns per call",
       "the same, two threads at once"},
      {"schedule", "p1.ns_per_call", "netty", kAtLeast, 1, "x",
       "schedule, 1 producer: netty / tickwheel ns per call",
       "newTimeout() costs no more than in Netty's HashedWheelTimer, the "
       "design tickwheel follows, measured in the same run"},
      {"schedule", "p1.ns_per_call", "", kAtMost, 1.5, "x",
       "schedule, 1 producer: slowest / fastest process ns per call",
       "a fresh process measures what the last one did: the slowest "
       "repetition within 1.5x of the fastest",
       Measure::kSpread},
      {"schedule_cancel", "p1.ns_per_pair", "", kAtMost, 70, "ns",
       "schedule_cancel, 1 producer: ns per pair",
       "most timeouts are cancelled before they fire (a request answered in "
       "time)"},
      {"schedule_cancel", "p1.ns_per_pair", "heap", kAtLeast, 3, "x",
       "schedule_cancel, 1 producer: heap / tickwheel ns per pair",
       "worth a dependency for the request-timeout pattern"},
      {"schedule_cancel", "p2.ns_per_pair", "heap", kAtLeast, 3, "x",
       "schedule_cancel, 2 producers: heap / tickwheel ns per pair",
       "the same, two threads"},
      {"schedule_cancel", "p1.ns_per_pair", "asio", kAtLeast, 1, "x",
       "schedule_cancel, 1 producer: asio / tickwheel ns per pair",
       "cheaper than Boost.Asio"},
      {"schedule_cancel", "p2.ns_per_pair", "asio", kAtLeast, 1, "x",
       "schedule_cancel, 2 producers: asio / tickwheel ns per pair",
       "the same, two threads"},
      {"memory", "bytes_per_pending", "", kAtMost, 56, "B",
       "memory: bytes per pending timeout",
       "a million pending timeouts fit in 56 MB, their tasks included"},
      {"schedule", "p1.faults_per_m", "", kAtMost, 1000, "faults",
       "schedule, 1 producer: caller page faults per 1M calls",
       "fresh memory is faulted in ahead of need, not in newTimeout()"},
      {"release", "rss_after_mb", "", kAtMost, 8, "MB",
       "release: RSS above baseline 10 s after 1M cancelled",
       "a burst's memory goes back once it has gone unused for a while"},
      {"idle", "pending1.wakeups_per_s", "", kAtMost, 0, "/s",
       "idle, 1 pending: wake-ups", "an idle timer does not poll"},
      {"idle", "pending1000000.cpu_percent", "", kAtMost, 1, "% core",
       "idle, 1M pending: CPU",
       "timeouts far away cost no CPU while they wait"},
      {"lateness", "tick.p99_us", "", kAtMost, 1500, "us",
       "lateness, 1 ms tick: p99",
       "99 in 100 timeouts run within one tick plus 0.5 ms of their deadline"},
      {"lateness", "slack0.p50_us", "", kAtMost, 100, "us",
       "lateness, 1 ms tick, slack 0: p50",
       "with slack 0, a heap timer's precision: half run within 0.1 ms"},
      {"lateness", "slack0.p99_us", "", kAtMost, 300, "us",
       "lateness, 1 ms tick, slack 0: p99", "and 99 in 100 within 0.3 ms"},
      {"lateness", "slack0.p50_us", "asio", kAtLeast, 1, "x",
       "lateness, slack 0: asio / tickwheel p50",
       "with slack 0, as exact as the exact timers: Boost.Asio"},
      {"lateness", "slack0.p50_us", "libevent", kAtLeast, 1, "x",
       "lateness, slack 0: libevent / tickwheel p50", "and libevent"},
      {"burst", "same_deadline.max_ms", "", kAtMost, 20, "ms",
       "burst, 1M due at once: last run after the deadline",
       "a million timeouts due at one instant have all run 20 ms later"},
      {"mass_expiry", "per_worker_cpu_mps", "", kAtLeast, 20, "M/s",
       "mass_expiry: expiries per worker CPU second",
       "the timer's thread keeps up with 20 million expiries a second"},
      {"owner_schedule_cancel", "producer_over_owner.ns_per_pair", "", kAtLeast,
       2.5, "x", "owner_schedule_cancel: Timer / LocalTimer ns per pair",
       "on the thread that owns it, a LocalTimer pair costs well under half "
       "of a Timer's: no lane, no atomic hand-over to a worker"},
      {"owner_schedule_cancel", "owner.ns_per_pair", "libuv", kAtLeast, 1, "x",
       "owner_schedule_cancel: libuv / tickwheel ns per pair",
       "an event loop's own timer costs less with LocalTimer than with "
       "libuv's uv_timer_t"},
      {"owner_schedule_cancel", "owner.ns_per_pair", "libevent", kAtLeast, 1,
       "x", "owner_schedule_cancel: libevent / tickwheel ns per pair",
       "and than with libevent's timer events"},
      {"owner_schedule_cancel", "owner.cpu_per_pair", "libuv", kAtLeast, 1, "x",
       "owner_schedule_cancel: libuv / tickwheel CPU per pair",
       "the same in CPU, which preemption does not inflate"},
      {"owner_schedule_cancel", "owner.cpu_per_pair", "libevent", kAtLeast, 1,
       "x", "owner_schedule_cancel: libevent / tickwheel CPU per pair",
       "the same against libevent"},
      {"owner_mass_expiry", "owner.last_run_ms", "libuv", kAtLeast, 1, "x",
       "owner_mass_expiry: libuv / tickwheel deadline to last run",
       "a loop that owns a LocalTimer is through a flood of expiries sooner "
       "than with libuv"},
      {"owner_mass_expiry", "owner.last_run_ms", "libevent", kAtLeast, 1, "x",
       "owner_mass_expiry: libevent / tickwheel deadline to last run",
       "and than with libevent"},
      {"owner_mass_expiry", "owner.expiries_mps", "libuv", kAtMost, 1, "x",
       "owner_mass_expiry: libuv / tickwheel expiries per second",
       "it runs expiries faster than libuv's loop"},
      {"owner_mass_expiry", "owner.expiries_mps", "libevent", kAtMost, 1, "x",
       "owner_mass_expiry: libevent / tickwheel expiries per second",
       "and than libevent's"},
  };
  return goals;
}

std::vector<GoalResult> EvaluateGoals(const Results& r) {
  std::vector<GoalResult> out;
  for (const Goal& g : Goals()) {
    const std::string key = fmt::format("{}.{}", g.workload, g.metric);
    GoalResult res{&g, r.Summarize("tickwheel", key), std::nullopt,
                   std::nullopt, std::nullopt};
    if (g.measure == Measure::kSpread) {
      if (res.tickwheel && res.tickwheel->count >= 2 && res.tickwheel->min > 0)
        res.value = res.tickwheel->max / res.tickwheel->min;
    } else if (*g.baseline == '\0') {
      if (res.tickwheel) res.value = res.tickwheel->median;
    } else if ((res.baseline = r.Summarize(g.baseline, key)) && res.tickwheel &&
               res.tickwheel->median > 0) {
      res.value = res.baseline->median / res.tickwheel->median;
    }
    if (res.value)
      res.met = g.at_most ? *res.value <= g.bound : *res.value >= g.bound;
    out.push_back(res);
  }
  return out;
}

namespace {
std::string WithUnit(const std::string& number, const std::string& unit) {
  return unit == "x" ? number + unit : number + " " + unit;
}
// Three significant digits, never in exponent form: "248", "21.4", "0.00094".
std::string Figure(double v) {
  return std::abs(v) >= 100 ? fmt::format("{:.0f}", v)
                            : fmt::format("{:.3g}", v);
}
}  // namespace

std::string GoalText(const Goal& g) {
  return fmt::format("{} {} {}", g.name, g.at_most ? "<=" : ">=",
                     WithUnit(fmt::format("{:g}", g.bound), g.unit));
}

std::string MeasuredText(const GoalResult& r) {
  if (!r.value) return "not measured";
  const Summary& tw = *r.tickwheel;
  if (r.goal->measure == Measure::kSpread) {
    return fmt::format("{:.2f}x (tickwheel {}-{})", *r.value, Figure(tw.min),
                       Figure(tw.max));
  }
  if (r.baseline) {
    return fmt::format("{:.2f}x ({} {:.1f}, tickwheel {:.1f})", *r.value,
                       r.goal->baseline, r.baseline->median, tw.median);
  }
  if (tw.count == 1) return WithUnit(Figure(tw.median), r.goal->unit);
  return WithUnit(fmt::format("{} [{}-{}]", Figure(tw.median), Figure(tw.min),
                              Figure(tw.max)),
                  r.goal->unit);
}

}  // namespace tickwheel::bench
