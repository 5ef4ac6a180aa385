// timer/idle/idle_core.h
// -----------------------------------------------------------------------------
// Internal. IdleCore: the registrations of one idle tracker. It keeps the
// registry of entries (every entry with a live handle that is registered or
// dormant), and runs Register/reregister/unregister and the
// Activate/Deactivate/Close life cycle over it: the Timer side of that life
// cycle is IdleActivation's (timer/idle/idle_activation.h), the per-object
// state machine IdleEntry's (timer/idle/idle_entry.h), and what entries share
// with the tracker IdleContext's (timer/idle/idle_context.h). IdleTracker
// (timer/idle_tracker.h) is a thin facade over it; users include that header.
//
// Ownership: the facade holds the only strong reference; each IdleHandle
// holds a weak one, so a handle reaches the core while the tracker lives and
// keeps nothing of it afterwards. (Make the core with `new`, not make_shared,
// so that weak references do not keep its memory either.) Entries hold the
// context, not the core. Close() detaches every entry and releases what the
// application gave (its Timer, the clock, the task executor).
//
// Ground rules
// ------------
//   mu_ guards the activation count, closed_, the registry and the
//   activation (which Timer, and its refresh). Every public method takes it;
//   the timer's worker never does (it takes one entry's lock at a time), so a
//   slow Register() cannot stall expiry and a stalled worker cannot block
//   Register(). Lock order: mu_, then an entry's lock or the refresher's.
//   Entries are armed with mu_ held, which keeps the activation's Timer
//   alive: Deactivate and Close take it out of the activation under mu_ and
//   stop it only after releasing mu_.
//   A handle racing the tracker's destruction: the handle's weak reference
//   either yields the core for the whole call, and then mu_ orders the call
//   against Close(); or it yields nothing, and then Close() has detached the
//   entry. Either way every change to the entry is made under the entry's
//   own lock, which orders it against the detach.
//
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_IDLE_CORE_H_
#define TICKWHEEL_TIMER_IDLE_CORE_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/idle/idle_activation.h"
#include "tickwheel/timer/idle/idle_context.h"
#include "tickwheel/timer/idle/idle_entry.h"
#include "tickwheel/timer/idle/intrusive_list.h"
#include "tickwheel/timer/idle_tracker_metrics.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {

// What the application gave the tracker: held until Close().
struct IdleResources {
  IdleTaskExecutor task_executor;  // may be empty
  std::shared_ptr<Clock> clock;    // null iff shared_timer is set
  // The application's Timer, when the tracker runs on it (no timer of its
  // own); its tick and clock are the tracker's.
  std::shared_ptr<Timer> shared_timer;
};

class IdleCore {
 public:
  IdleCore(IdleConfig config, IdleResources resources);
  IdleCore(const IdleCore&) = delete;
  IdleCore& operator=(const IdleCore&) = delete;
  ~IdleCore();

  // What handles share: the coarse clock they read, the options.
  const IdleContext& context() const { return *context_; }

  // IdleTracker::Register: a new entry (refs == 1, owned by the caller's
  // handle), registered, and armed if active (dormant otherwise).
  IdleEntry* Register(absl::AnyInvocable<void()> on_idle, int64_t timeout_nanos)
      ABSL_LOCKS_EXCLUDED(mu_);
  // IdleHandle::reregister. FailedPrecondition once the tracker is closed.
  absl::Status Reregister(IdleEntry* entry, absl::AnyInvocable<void()> on_idle,
                          int64_t timeout_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // IdleHandle::unregister(): ends the entry's registration and takes it out
  // of the registry under mu_, then cancels, destroys on_idle and waits for
  // a running one with no lock held. True iff the registration ended before
  // its on_idle started.
  bool Unregister(IdleEntry* entry) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status Activate() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Deactivate() ABSL_LOCKS_EXCLUDED(mu_);
  // ~IdleTracker: detaches every entry (each on_idle destroyed unrun), ends
  // the activation (bounded by the drain timeout), releases the
  // application's Timer, clock and task executor; later Activate() and
  // Reregister() fail.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  bool active() const ABSL_LOCKS_EXCLUDED(mu_);
  IdleTrackerMetrics Metrics() const ABSL_LOCKS_EXCLUDED(mu_);
  TimerMetrics TimerMetricsSnapshot() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::shared_ptr<IdleContext> context_;

  mutable Mutex mu_;
  int64_t active_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  IdleActivation activation_ ABSL_GUARDED_BY(mu_);
  IntrusiveList<IdleEntry> registry_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_CORE_H_
