// tools/bench/workloads/owner_thread.h
// -----------------------------------------------------------------------------
// The owner-thread workloads: one thread owns the timer and drives its loop,
// as an event-loop server does, and nothing is handed to another thread
// (tools/bench/owner_models.h). Two variants each:
//   "owner thread"         tickwheel's LocalTimer; libuv's uv_timer_t and
//                          libevent's timer events on their loop, used from
//                          the loop's own thread
//   "Timer, one producer"  tickwheel's Timer with this thread as its one
//                          producer and its worker running the tasks: what
//                          an owner thread gains by LocalTimer. tickwheel
//                          only (Variant::impls).
// No asio or heap rows: the heap timer is a thread of its own by design, and
// an Asio timer used on its own io thread is what coro_deadline measures.
// Not templates over the BenchTimer concept, whose timers all have a thread.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_OWNER_THREAD_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_OWNER_THREAD_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

std::vector<Variant> OwnerVariants(const BenchConfig& c);

// owner_schedule_cancel: N timeouts 10-60 s away, each cancelled right after
// it is scheduled (a request answered in time), from the owner thread, with
// one loop turn without waiting after every 1,000 pairs (LocalTimer's
// advance(), uv_run(UV_RUN_NOWAIT), event_base_loop(EVLOOP_NONBLOCK); none
// for the Timer), which frees what the cancels left to the loop. Timed
// whole: wall time and the thread's CPU per pair. Every cancel must succeed
// and nothing may stay pending or run. A third variant runs libuv with
// uv_update_time() before each uv_timer_start(): libuv counts a timeout
// from the loop's cached time, read once per turn, so by default its
// timeouts run early by however long the turn has run; this is the same
// loop paying the clock read that a LocalTimer's newTimeout() makes to
// count from the call (a reference row, not a goal).
struct OwnerScheduleCancel {
  static constexpr const char* kName = "owner_schedule_cancel";
  static constexpr const char* kWhat =
      "the timer's own thread schedules and at once cancels: cost";
  static constexpr Metric kMetrics[] = {
      {"ns_per_pair", "ns per schedule+cancel", "ns", Better::kLower, 1},
      {"cpu_per_pair", "thread CPU per pair", "ns", Better::kLower, 1}};
  static constexpr const char* kRatioMetric = "ns_per_pair";
  static std::vector<Variant> Variants(const BenchConfig& c);

  // One repetition; `producer` picks Timer over LocalTimer.
  static RepOutput RunTickwheel(const BenchConfig& c, int64_t producer,
                                uint64_t seed);
  // `read_clock`: the uv_update_time() variant.
  static RepOutput RunUv(const BenchConfig& c, int64_t read_clock,
                         uint64_t seed);
  static RepOutput RunEvent(const BenchConfig& c, int64_t, uint64_t seed);
};

// owner_mass_expiry: N timeouts due at one instant 3 s ahead (all scheduled
// before it), from the owner thread, which then drives its loop until all
// have run (LocalTimer: wait pollTimeoutMs() in poll(), advance(); libuv:
// uv_run(); libevent: event_base_loop()); tickwheel at --tick_ms. Reports the
// deadline to the last run and N per wall second from the first run to the
// last. A run before the deadline fails.
struct OwnerMassExpiry {
  static constexpr const char* kName = "owner_mass_expiry";
  static constexpr const char* kWhat =
      "N timeouts due at one instant, the owner thread runs them: rate";
  static constexpr Metric kMetrics[] = {
      {"last_run_ms", "deadline to last run", "ms", Better::kLower, 1},
      {"expiries_mps", "expiries per second", "M/s", Better::kHigher, 2}};

  static RepOutput RunTickwheel(const BenchConfig& c, int64_t producer,
                                uint64_t seed);
  static RepOutput RunUv(const BenchConfig& c, int64_t, uint64_t seed);
  static RepOutput RunEvent(const BenchConfig& c, int64_t, uint64_t seed);
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_OWNER_THREAD_H_
