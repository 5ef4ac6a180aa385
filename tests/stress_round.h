// tests/stress_round.h
// -----------------------------------------------------------------------------
// One round of the random soak of the exactly-once invariant
// (tests/stress_test.cc runs rounds of it).
//
// Several producer threads schedule tasks on a real-clock Timer (1 ms tick),
// cancel random timeouts at random moments, and the tasks themselves
// reschedule children and cancel other timeouts from the worker (or from a
// task executor thread). Producers also reset() live timeouts to new
// delays, schedule periodic timeouts (newPeriodic(), which cancel themselves
// after a few runs, or run until something else ends them), and now and then
// call cancelAll(), as do a few tasks. Meanwhile a stopper thread calls
// stop() at a random point (in some rounds two stoppers race). Afterwards
// every task ever handed to newTimeout() or newPeriodic() is accounted for
// (tests/stress_ledger.h):
//
//   * rejected (FailedPrecondition only after stop() began, ResourceExhausted
//     only with max_pending_timeouts): never ran, captures destroyed once;
//   * accepted one-shot: exactly one of ran (once), cancelled (cancel()
//     returned true exactly once), returned by stop() (isCancelled(),
//     takeTask() gives the task exactly once) or cancelled by a cancelAll(),
//     and its captures destroyed exactly once;
//   * accepted periodic: any number of runs, never two at once, and ended by
//     exactly one of cancel(), stop() or a cancelAll(); without a task
//     executor, at most the run already claimed begins after a cancel() of
//     it has returned;
//   * the counts that cancelAll() calls returned add up to the timeouts that
//     ended neither way above;
//   * no task ran before its deadline (the real clock read before
//     newTimeout() plus the delay, or Timeout::deadline() once a reset()
//     moved it);
//   * pendingTimeouts() never exceeded max_pending_timeouts, and is 0 after
//     stop().
//
// Threads share handles the way servers do: each accepted Timeout is kept
// once, behind a shared_ptr in a ring, and every thread that picks it
// cancels, copies or queries that same object, so that cancels of one
// handle race each other, a copy, an expiry and stop().

#ifndef TICKWHEEL_TESTS_STRESS_ROUND_H_
#define TICKWHEEL_TESTS_STRESS_ROUND_H_

#include <cstdint>

#include "tests/stress_ledger.h"

namespace tickwheel::stress {

struct StressParams {
  uint32_t seed = 1;
  int producers = 4;
  int ops_per_producer = 1500;
  bool use_executor = false;  // a task executor with a thread of its own
  int64_t max_pending = 0;    // max_pending_timeouts; 0: unlimited
  int stoppers = 1;           // threads that call stop()
};

// The parameters of round `seed`: an executor in every other round, a limit
// of 50 in every third, two stoppers in every fourth.
StressParams ParamsForSeed(uint32_t seed, int ops_per_producer);

// Runs one round; every broken promise is a test failure (gtest). Returns
// what the round exercised.
StressCounts RunStressRound(const StressParams& params);

}  // namespace tickwheel::stress

#endif  // TICKWHEEL_TESTS_STRESS_ROUND_H_
