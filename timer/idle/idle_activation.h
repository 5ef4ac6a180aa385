// timer/idle/idle_activation.h
// -----------------------------------------------------------------------------
// Internal. IdleActivation: the Timer side of one idle tracker. It knows which
// Timer the current activation runs on (one it creates for each activation,
// or the application's, IdleTrackerOptions::timer), keeps the coarse clock's
// refresh on it (IdleRefresher), and ends an activation: a Timer of its own is
// stopped on a stopper thread, and on_idle calls in progress are waited for,
// at most the drain timeout. It holds the application's clock or Timer until
// Release(). Users include timer/idle_tracker.h.
//
// IdleCore owns one, next to the registry of entries: the core decides when
// to activate and arms the entries on timer(); this class never sees an entry.
//
// Ending an activation has two halves. End() (or Release()) runs under the
// owner's lock: it takes the Timer out, so that no entry can be armed on it
// any more, and ends the refreshes. Ending::Finish() runs with no lock held:
// it stops that Timer and waits. A stop that outlasts the drain timeout goes
// on in the background; the stopper thread then shares only the context and
// the record of the last Timer's metrics, never the owner.
//
// This class is thread-compatible: IdleCore calls it with its mutex held
// (which is also what keeps timer() alive while entries are armed on it),
// except Ending::Finish(). The last-metrics record has a mutex of its own,
// since the stopper thread writes it whenever the stop completes.

#ifndef TICKWHEEL_TIMER_IDLE_ACTIVATION_H_
#define TICKWHEEL_TIMER_IDLE_ACTIVATION_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/idle/idle_context.h"
#include "tickwheel/timer/idle/idle_refresher.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {

class IdleActivation {
 public:
  class Ending;

  // Exactly one of `clock` (a Timer of its own per activation, on that
  // clock) and `shared_timer` (the application's) is set.
  IdleActivation(std::shared_ptr<IdleContext> context,
                 std::shared_ptr<Clock> clock,
                 std::shared_ptr<Timer> shared_timer);
  IdleActivation(const IdleActivation&) = delete;
  IdleActivation& operator=(const IdleActivation&) = delete;

  // The current activation's Timer; null while inactive.
  Timer* timer() const { return timer_; }
  // Whether the tracker runs on the application's Timer.
  bool on_shared_timer() const { return on_shared_timer_; }
  // The tracker's clock now: its own Clock, or the application's Timer's.
  // Not after Release().
  int64_t NowNanos() const;

  // Starts an activation at clock reading `now` (inactive before): creates
  // a Timer of its own, or takes the application's, and starts the refresh.
  // Returns that Timer. Errors: Timer::Create's (the instance limit);
  // FailedPrecondition when the application's Timer has been stopped and
  // something is tracked (the refresh cannot be scheduled). Not after
  // Release().
  absl::StatusOr<Timer*> Start(int64_t now);
  // A registration was made at clock reading `now`: resumes a paused refresh
  // while active (IdleRefresher::Resume).
  void Registered(int64_t now);
  // Ends the current activation (active before): no timer() any more, no
  // refresh; what is left to do is in the result.
  Ending End();
  // The tracker is being destroyed: ends the activation if there is one,
  // and hands over the application's clock and Timer, to be dropped by the
  // result after its Finish().
  Ending Release();

  // The current activation's Timer's metrics; while inactive, the
  // application's Timer's, or the last own Timer's once it has stopped.
  TimerMetrics Metrics() const;

 private:
  // The metrics of the last own Timer, written by the stopper thread.
  struct LastMetrics {
    Mutex mu;
    TimerMetrics value ABSL_GUARDED_BY(mu);
  };

  const std::shared_ptr<IdleContext> context_;
  const std::shared_ptr<IdleRefresher> refresher_;
  const std::shared_ptr<LastMetrics> last_metrics_;
  const bool on_shared_timer_;
  std::shared_ptr<Clock> clock_;         // null on a shared Timer
  std::shared_ptr<Timer> shared_timer_;  // null on Timers of its own
  std::unique_ptr<Timer> owned_timer_;   // this activation's own Timer
  Timer* timer_ = nullptr;               // owned_timer_ or shared_timer_
};

// What is left of ending an activation once the owner's lock is released.
// Move-only. Destroyed without Finish(), it stops the own Timer on the spot.
class IdleActivation::Ending {
 public:
  Ending(Ending&&) = default;
  Ending& operator=(Ending&&) = default;

  // Stops the activation's own Timer (if any) on a stopper thread: its
  // timeouts are all library timeouts, so stop() destroys their tasks (and
  // the entry references they hold) unrun. Then waits for on_idle calls in
  // progress. Waits at most the drain timeout, and not at all when called
  // from one of this tracker's on_idle calls (the stop needs that call to
  // return first): the stop then completes in the background.
  // DeadlineExceeded when the drain timeout ran out.
  absl::Status Finish() &&;

 private:
  friend class IdleActivation;
  Ending(std::shared_ptr<IdleContext> context,
         std::shared_ptr<LastMetrics> last_metrics)
      : context_(std::move(context)), last_metrics_(std::move(last_metrics)) {}

  std::shared_ptr<IdleContext> context_;
  std::shared_ptr<LastMetrics> last_metrics_;
  std::unique_ptr<Timer> timer_;  // the activation's own, to stop
  // Released by Release(): dropped when this is destroyed, after Finish()
  // (the last reference to the application's Timer joins its worker).
  std::shared_ptr<Timer> released_timer_;
  std::shared_ptr<Clock> released_clock_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_ACTIVATION_H_
