// timer/manual_clock.h
// -----------------------------------------------------------------------------
// A Clock that moves only when told to, for deterministic tests of anything
// that runs on a Timer.
//
// Example:
//   auto clock = std::make_shared<tickwheel::ManualClock>();
//   tickwheel::TimerOptions options;
//   options.clock = clock;
//   auto timer = tickwheel::Timer::Create(options).value();
//   timer->newTimeout(task, absl::Milliseconds(250));
//   clock->AdvanceAndSettle(absl::Milliseconds(300));  // the task has run
//
// AwaitIdle() is what makes such tests exact: it returns only once every
// thread sleeping on this clock (each Timer's worker) has gone back to sleep
// with a deadline still in the future, so all work that the new time made due
// has been done. A worker that runs tasks on a TimerOptions::task_executor
// hands them off before it sleeps; whether the executor has run them is the
// executor's business.
//
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_MANUAL_CLOCK_H_
#define TICKWHEEL_TIMER_MANUAL_CLOCK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel {

class ManualClock final : public Clock {
 public:
  // The clock starts at `start_nanos` (any value; 0 by default).
  explicit ManualClock(int64_t start_nanos = 0);
  ~ManualClock() override;

  int64_t NowNanos() ABSL_LOCKS_EXCLUDED(mu_) override;
  std::unique_ptr<Sleeper> NewSleeper() ABSL_LOCKS_EXCLUDED(mu_) override;

  // Moves time forward by `d` (negative counts as zero) and wakes every sleeper
  // whose deadline is now reached. Does not wait for them.
  void Advance(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until every live sleeper of this clock is asleep with a deadline
  // later than NowNanos() (or none: INT64_MAX) and no pending Wake(). Returns
  // at once when there are no sleepers.
  void AwaitIdle() ABSL_LOCKS_EXCLUDED(mu_);

  // Advance(d) then AwaitIdle().
  void AdvanceAndSettle(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);

  // Advances in steps of `step` until `total` has passed, settling after each
  // step: what a worker that is never late would see.
  void AdvanceInSteps(absl::Duration total, absl::Duration step)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Number of sleepers currently registered (one per running worker).
  int SleeperCount() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class ManualSleeper;
  friend class ManualSleeper;

  // One per live ManualSleeper, which owns it. Guarded by mu_ (declared on
  // ManualSleeper::state_; IdleLocked() reads them through sleepers_).
  struct SleeperState {
    bool asleep = false;   // inside SleepUntil(), blocked
    bool woken = false;    // Wake() not yet consumed
    int64_t deadline = 0;  // valid while asleep
  };

  bool IdleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Guards the time, the registry of sleepers and every SleeperState.
  internal::Mutex mu_;
  // Signalled on every change: time, sleeper state, registration.
  std::condition_variable_any cv_;
  int64_t now_ ABSL_GUARDED_BY(mu_);
  std::vector<SleeperState*> sleepers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_MANUAL_CLOCK_H_
