// base/missed_runs.h
// -----------------------------------------------------------------------------
// MissedRuns: what a periodic timeout (Timer::newPeriodic()) does about runs
// it missed, as tokio's MissedTickBehavior. Public: users reach it through
// "tickwheel/timer/timer.h". It lives in base/ because both the facade, which
// takes it, and the engine, which applies it (worker/task_runner.h, driven by
// a Timer's worker or by an event loop), stand on it; the policy travels from
// one to the other in the timeout's DeadlineSpec (base/deadline_spec.h) and
// stays in its task box (base/periodic_task.h).
//
// When a run counts as late
//   A periodic timeout's runs are due on a grid: start + initial_delay +
//   k * period. A run is late when the next grid time has come by the time
//   the worker is done with it (its task returned; with a task_executor, it
//   was handed over): at least one run was missed, because a task was slow,
//   the worker was busy or the process was suspended. A run less than a period
//   late (the tick's rounding, a short delay) keeps the grid under every
//   policy: the next run is at the next grid time. (tokio counts a tick as
//   missed once it is 5 ms late; here the measure is the period, so that the
//   tick's rounding never moves a kDelay grid.)
//
// What each policy does after a late run due at `due`, with the worker done
// with it at clock reading `now` (period p):
//
//   kSkip   the missed runs are skipped; the next run is the first grid time
//           after `now`: due + k * p with k = (now - due) / p + 1. The grid
//           stays. The default.
//   kBurst  the missed runs run at once, one after another, each with its own
//           grid time as its deadline (its lateness is measured from it), and
//           then the runs go on on the grid. The burst covers the grid times
//           up to the clock reading at which the worker found the late run;
//           those that come due while it runs are late runs of their own, in
//           the worker's next pass. A huge backlog is bounded: when more than
//           kMaxBurstRuns runs are missed, only the kMaxBurstRuns most recent
//           of them run and the older ones are skipped. So a stall of 1000
//           periods is a late run and its 999 or 1000 missed runs, all run;
//           a process suspended for a day behind a 1 ms period misses about
//           86 million, and a late run and kMaxBurstRuns of them run, not one
//           run per period the stall lasted. (tokio bursts all.)
//   kDelay  the missed runs are skipped and the grid moves: the next run is
//           one period after `now`, and the runs go on every period from it.
//
// With a task_executor, runs never overlap: a run that comes due while the
// previous one is still on the executor is skipped under kSkip; under kBurst
// and kDelay it waits for it (it is not lost), and the worker looks at it
// again at the end of each tick, handing it over once the previous run is
// over. So a burst goes back to back on the worker's thread (inline tasks,
// or an executor that runs what it is given before returning), and at the
// executor's pace, one run per tick at most, otherwise.
//
// A reset() or resetAt() of a periodic timeout moves its next run, under
// every policy, and the grid restarts from the new deadline: a reset during a
// burst (from the task, or from another thread between two of its runs) ends
// the burst there. A cancel() during a burst makes the run in progress the
// last one, as always.
//
// Cost: the policy is one byte in the timeout's task box, read once per run;
// choosing the next run is a few 128-bit integer operations, exact for any
// period and clock reading (never overflowing). kSkip and kDelay run at most
// one run per grid time that comes; a kBurst catch-up of k missed runs is k
// more runs, back to back on the worker, which serves its queues (cancels,
// new timeouts) after the burst rather than between its runs: one more
// reason for the bound, k <= kMaxBurstRuns per late run.

#ifndef TICKWHEEL_BASE_MISSED_RUNS_H_
#define TICKWHEEL_BASE_MISSED_RUNS_H_

#include <cstdint>

namespace tickwheel {

// What a periodic timeout does about runs it missed (the rules above).
enum class MissedRuns : uint8_t {
  kSkip,   // skip them; the next run is the next grid time (the default)
  kBurst,  // run them at once, back to back (at most kMaxBurstRuns of them)
  kDelay,  // skip them; the next run is one period after the late one
};

// Under MissedRuns::kBurst, the most missed runs that one late run is
// followed by; older missed runs are skipped.
inline constexpr int64_t kMaxBurstRuns = 1024;

}  // namespace tickwheel

#endif  // TICKWHEEL_BASE_MISSED_RUNS_H_
