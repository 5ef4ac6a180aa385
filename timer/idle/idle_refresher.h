// timer/idle/idle_refresher.h
// -----------------------------------------------------------------------------
// Internal. IdleRefresher: the task that keeps an idle tracker's coarse clock
// (timer/idle/idle_clock.h) fresh, on the Timer of the current activation,
// while something is registered. Users include timer/idle_tracker.h.
//
// One run publishes the ceiling (clock reading) + refresh_period and schedules
// the next run refresh_period - tick ahead: the Timer runs it at the first
// tick end at or after that, which is at most refresh_period ahead, so the
// ceiling just published holds until then. Each run is a library timeout
// (timer/internal/library_timeouts.h): an application's cancelAll() passes it
// by and its stop() destroys it unrun.
//
// The refresh pauses while nothing is tracked: a run that finds
// counters().tracked == 0 publishes nothing and schedules nothing. Resume()
// (a registration was just made) restarts it, publishing a fresh ceiling
// first. Why a stale ceiling meanwhile loses nothing is in
// timer/idle_tracker.h, "Accuracy".
//
// Ground rules
// ------------
//   lock_ guards generation_, pending_, paused_ and timer_. Runs take it on
//   the worker; Start(), Resume() and End() take it with the caller's lock
//   (IdleCore::mu_) held, never the other way round.
//   generation_ names the activation the runs belong to: Start() and End()
//   bump it, and a run of an older generation does nothing. A run that
//   schedules the next one either stores its handle in pending_ before the
//   activation ends (and End() cancels it) or finds the new generation when
//   it goes to store it (and cancels it itself).
//   paused_: no run of the current generation is scheduled or running. A run
//   pauses only after reading tracked == 0 under lock_, and a registration
//   counts itself in `tracked` before Resume() takes lock_, so of a run that
//   pauses and a registration that resumes, one always sees the other.
//   A run the Timer refuses (stopped, or the application's pending limit)
//   leaves the refresh paused, so that the next Resume() tries again.
//
// This class is thread-safe. Start() and Resume() need the Timer alive for
// the duration of the call (the caller's lock keeps the activation's Timer
// alive); runs use the Timer they run on.

#ifndef TICKWHEEL_TIMER_IDLE_REFRESHER_H_
#define TICKWHEEL_TIMER_IDLE_REFRESHER_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tickwheel/timer/idle/idle_context.h"
#include "tickwheel/timer/idle/spin_lock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {

// Pending runs share ownership of the refresher, so make it with
// std::make_shared.
class IdleRefresher : public std::enable_shared_from_this<IdleRefresher> {
 public:
  explicit IdleRefresher(std::shared_ptr<IdleContext> context);
  IdleRefresher(const IdleRefresher&) = delete;
  IdleRefresher& operator=(const IdleRefresher&) = delete;

  // A new activation on `timer`, whose clock reads `now`: publishes the
  // ceiling, and schedules the first run when something is tracked (paused
  // otherwise). An error from the Timer (it was stopped) ends the activation's
  // refreshes again and is returned.
  absl::Status Start(Timer& timer, int64_t now) ABSL_LOCKS_EXCLUDED(lock_);

  // A registration was just made, at clock reading `now`: restarts a paused
  // refresh of the current activation (nothing while running or inactive).
  // An error from the Timer leaves it paused and is returned.
  absl::Status Resume(int64_t now) ABSL_LOCKS_EXCLUDED(lock_);

  // Ends the current activation's refreshes: a pending run is cancelled, a
  // running one schedules no other.
  void End() ABSL_LOCKS_EXCLUDED(lock_);

 private:
  class Run;

  // A run of `generation` on `timer` (null: the Timer is being destroyed).
  void OnRun(Timer* timer, uint64_t generation) ABSL_LOCKS_EXCLUDED(lock_);
  // Schedules the next run of `generation`.
  absl::Status Schedule(Timer& timer, uint64_t generation)
      ABSL_LOCKS_EXCLUDED(lock_);

  const std::shared_ptr<IdleContext> context_;
  IdleSpinLock lock_;
  uint64_t generation_ ABSL_GUARDED_BY(lock_) = 0;
  Timeout pending_ ABSL_GUARDED_BY(lock_);
  bool paused_ ABSL_GUARDED_BY(lock_) = true;
  // The current activation's Timer; null while inactive.
  Timer* timer_ ABSL_GUARDED_BY(lock_) = nullptr;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_REFRESHER_H_
