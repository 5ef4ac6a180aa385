// tests/stress_ledger.h
// -----------------------------------------------------------------------------
// The ledger of one stress round (tests/stress_round.h): one Entry per task
// handed to newTimeout() or newPeriodic(), written by every thread that
// touches the task, and CheckLedger(), which judges the entries once every
// thread is done against the exactly-once promises listed in stress_round.h.

#ifndef TICKWHEEL_TESTS_STRESS_LEDGER_H_
#define TICKWHEEL_TESTS_STRESS_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace tickwheel::stress {

// One record per newTimeout() or newPeriodic() attempt. Every field is
// atomic: producers, tasks (on the worker or the executor's thread) and the
// stoppers write it at once.
struct Entry {
  std::atomic<int> accepted{0};
  std::atomic<int> rejected{0};
  std::atomic<int> runs{0};
  std::atomic<int> destroyed{0};  // destructions of the task's captures
  std::atomic<int> cancelled{0};  // cancel() calls that returned true
  std::atomic<int> early{0};      // runs before the deadline
  std::atomic<int> bad_code{0};   // rejected with an unexpected status
  std::atomic<bool> periodic{false};
  std::atomic<int> resets{0};       // reset() calls that returned true
  std::atomic<bool> in_run{false};  // a periodic run is in progress
  std::atomic<int> overlaps{0};     // runs that began during another
  std::atomic<bool> cancel_returned{false};
  std::atomic<int> runs_after_cancel{0};  // runs begun after it returned
};

// Totals over a round, printed so that CI logs show how much was exercised.
struct StressCounts {
  int64_t operations = 0;  // producer operations + task actions
  int64_t attempts = 0;    // newTimeout() calls
  int64_t accepted = 0;
  int64_t rejected = 0;
  int64_t ran = 0;
  int64_t cancelled = 0;
  int64_t stopped = 0;
  int64_t from_tasks = 0;  // newTimeout() calls made inside tasks
  int64_t periodic = 0;    // accepted newPeriodic() timeouts
  int64_t periodic_runs = 0;
  int64_t resets = 0;  // reset() calls that returned true
  int64_t by_cancel_all = 0;

  void Add(const StressCounts& o);
  std::string ToString() const;
};

// Judges entries[0, n) once every thread of the round is done. `in_stop[id]`
// is how often stop() returned task `id`; `cancelled_by_all` is the sum of
// the counts cancelAll() calls returned, which must equal the timeouts that
// ended by none of run, cancel() and stop(). Reports each broken promise
// (the first 20) as a test failure naming the task, and returns the totals
// (all but `operations` and `from_tasks`, which the round knows).
StressCounts CheckLedger(const Entry* entries, int64_t n,
                         const std::vector<int>& in_stop,
                         int64_t cancelled_by_all);

}  // namespace tickwheel::stress

#endif  // TICKWHEEL_TESTS_STRESS_LEDGER_H_
