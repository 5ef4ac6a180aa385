// timer/idle/idle_core.h
// -----------------------------------------------------------------------------
// Internal. IdleCore: the state one IdleTracker shares with its handles and
// with its timer's tasks: options, clock, the coarse clock, the counters, the
// registry of handles, the Timer of the current activation, and the
// Activate/Deactivate/Close life cycle. IdleTracker (timer/idle_tracker.h) is
// a thin facade over it; users include that header.
//
// Ownership: the facade, every IdleEntry (so every IdleHandle), every pending
// refresh task and a stopper thread in progress hold a shared_ptr to the
// core, so handles may outlive the tracker. The core owns the Timer of the
// current activation; Deactivate() hands it to a stopper thread that stops
// and destroys it. On an application's Timer (IdleTrackerOptions::timer) the
// core shares that Timer; Deactivate() cancels the entries' checks and the
// refresh instead, and the stopper only waits for on_idle calls in progress.
// Close() drops everything the application gave: its Timer, the clock and
// the task executor. What handles keep alive afterwards is the core's own
// memory (the coarse clock they read, the counters), nothing of the
// application's.
//
// Every timeout the core and its entries schedule is a library timeout
// (timer/idle/library_timeouts.h): on an application's Timer, cancelAll()
// passes them by and stop() destroys them unrun instead of returning them.
// The coarse clock's refresh runs only while something is tracked (see
// ResumeRefreshesLocked), so a tracker with no registrations schedules
// nothing.
//
// Ground rules
// ------------
//   mu_ guards the activation count, the Timer, the registry, closed_, and
//   the clock and the application's Timer (both null after Close()).
//   Register/Reregister/Unregister/Activate/Deactivate/Close take it; the
//   timer's worker never does (it takes one entry's lock at a time), so a
//   slow Register() cannot stall expiry and a stalled worker cannot block
//   Register(). Lock order: mu_, then an entry's lock.
//   Calls that arm an entry (newTimeout) do so with mu_ held, which keeps the
//   Timer alive: Deactivate and Close take it out under mu_.
//   Counters are atomics with relaxed RMWs: they are statistics and publish
//   nothing.
//   running_callbacks_ counts on_idle calls in progress (acq_rel RMWs; the
//   stopper waits for zero with an acquire load, so it sees what they did).
//   Checks and refreshes run on a timer's worker, outside mu_: they read the
//   time from the Timer they run on (alive inside its own task), never from
//   the core's clock; a check takes its own reference to the task executor
//   under executor_lock_, so Close() may drop the core's at any time.
//
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_IDLE_CORE_H_
#define TICKWHEEL_TIMER_IDLE_CORE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tickwheel/timer/idle/idle_clock.h"
#include "tickwheel/timer/idle/idle_entry.h"
#include "tickwheel/timer/idle/idle_metrics.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/mutex.h"
#include "tickwheel/worker/nanos.h"

namespace tickwheel::internal {

using IdleTaskExecutor = std::function<void(absl::AnyInvocable<void()>)>;

// Validated IdleTrackerOptions (see timer/idle_tracker.h for each field):
// the part that never changes.
struct IdleCoreConfig {
  int64_t default_timeout_nanos = 0;  // > 0
  absl::Duration tick_duration;       // > 0
  int ticks_per_wheel = 0;
  int64_t refresh_nanos = 0;     // >= tick
  absl::Duration drain_timeout;  // >= 0
  std::string thread_name;
};

// What the application gave the tracker: IdleCore holds it until Close().
struct IdleCoreResources {
  IdleTaskExecutor task_executor;  // may be empty
  std::shared_ptr<Clock> clock;    // null iff shared_timer is set
  // The application's Timer, when the tracker runs on it (no timer of its
  // own); its tick and clock are the tracker's.
  std::shared_ptr<Timer> shared_timer;
};

// A timer's clock reading in nanoseconds: what checks and refreshes use, on
// the worker of the Timer they run on.
inline int64_t TimerNowNanos(const Timer& timer) {
  return std::chrono::nanoseconds(timer.now().time_since_epoch()).count();
}

struct IdleCounters {
  std::atomic<int64_t> tracked{0};
  std::atomic<int64_t> fired{0};
  std::atomic<int64_t> rearmed{0};
  std::atomic<int64_t> stale_dropped{0};
  std::atomic<int64_t> timer_ops{0};
  std::atomic<int64_t> refreshes{0};
  std::atomic<int64_t> worst_lateness_nanos{0};
  std::atomic<int64_t> worst_clock_lag_nanos{0};

  static void Add(std::atomic<int64_t>& c, int64_t by = 1) {
    c.fetch_add(by, std::memory_order_relaxed);
  }
  static void RaiseTo(std::atomic<int64_t>& c, int64_t nanos) {
    int64_t cur = c.load(std::memory_order_relaxed);
    while (cur < nanos &&
           !c.compare_exchange_weak(cur, nanos, std::memory_order_relaxed)) {
    }
  }
};

class IdleCore : public std::enable_shared_from_this<IdleCore> {
 public:
  IdleCore(IdleCoreConfig config, IdleCoreResources resources);
  ~IdleCore();

  // IdleTracker::Register: a new entry (refs == 1, owned by the caller's
  // handle), registered and armed if active, dormant otherwise.
  IdleEntry* Register(absl::AnyInvocable<void()> on_idle, int64_t timeout_nanos)
      ABSL_LOCKS_EXCLUDED(mu_);
  // IdleHandle::reregister. FailedPrecondition once the tracker is gone.
  absl::Status Reregister(IdleEntry* entry, absl::AnyInvocable<void()> on_idle,
                          int64_t timeout_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // IdleHandle::unregister(): ends the entry's registration and takes it
  // out of the registry under mu_, then cancels, destroys on_idle and waits
  // for a running one with no lock held. True iff the registration ended
  // before its on_idle started.
  bool Unregister(IdleEntry* entry) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Activate() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Deactivate() ABSL_LOCKS_EXCLUDED(mu_);
  // ~IdleTracker: detaches every entry, stops the timer (bounded by the drain
  // timeout); later Activate() fails.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  bool active() const ABSL_LOCKS_EXCLUDED(mu_);
  IdleTrackerMetrics Metrics() const ABSL_LOCKS_EXCLUDED(mu_);
  TimerMetrics TimerMetricsSnapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // For entries.
  const IdleCoreConfig& config() const { return config_; }
  CoarseClock& coarse() { return coarse_; }
  // Publishes the ceiling for a clock reading `now` (refresh task, checks)
  // and records how late the previous ceiling was.
  void RefreshCoarse(int64_t now) {
    const int64_t prev =
        coarse_.Publish(SaturatingAdd(now, config_.refresh_nanos));
    if (prev < now)
      IdleCounters::RaiseTo(counters_.worst_clock_lag_nanos, now - prev);
  }
  // Whether on_idle calls go to a task executor (fixed at creation).
  bool has_task_executor() const { return has_task_executor_; }
  // The task executor, for one call; null once the tracker is closed.
  std::shared_ptr<const IdleTaskExecutor> task_executor() const
      ABSL_LOCKS_EXCLUDED(executor_lock_) {
    IdleSpinLockGuard l(&executor_lock_);
    return task_executor_;
  }
  IdleCounters& counters() { return counters_; }
  void CallbackStarted() {
    running_callbacks_.fetch_add(1, std::memory_order_acq_rel);
  }
  void CallbackDone() {
    if (running_callbacks_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      running_callbacks_.notify_all();
    }
  }

 private:
  class RefreshTask;

  void RemoveFromRegistryLocked(IdleEntry* entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddToRegistryLocked(IdleEntry* entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tracker's clock: its own Clock, or the application's Timer's.
  int64_t NowNanosLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return clock_ != nullptr ? clock_->NowNanos()
                             : TimerNowNanos(*shared_timer_);
  }
  // The refresh task of activation `generation`: publishes the coarse clock
  // and re-schedules itself on `timer`, until that activation ends or
  // nothing is tracked any more (then it pauses).
  void OnRefresh(Timer* timer, uint64_t generation);
  // Schedules the next refresh of `generation` on `timer`. Fails only when
  // the timer refuses (stopped, or the application's pending limit); the
  // refresh is then paused, so that the next registration tries again.
  absl::Status ScheduleRefresh(Timer* timer, uint64_t generation);
  // Called with something tracked (a registration was just made): if the
  // current activation's refresh is paused, publishes a fresh ceiling for
  // `now` and schedules the refresh again. Touches stamped while it was
  // paused belong to no registration (nothing was tracked), and the
  // registration just made stamped `now` exactly, so the ceiling's
  // guarantee (timer/idle_tracker.h, "Accuracy") holds for every
  // registration.
  absl::Status ResumeRefreshesLocked(int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the refreshes of a new activation on `timer` (paused when
  // nothing is tracked).
  absl::Status StartRefreshes(Timer* timer, int64_t now);
  // Ends the current activation's refreshes: a pending refresh is
  // cancelled, a running one does not re-schedule.
  void EndRefreshes();
  // With a shared timer: cancels every entry's check (entries dormant).
  void DisarmAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops `timer` (may be null) on a stopper thread, waits for it and for
  // on_idle calls in progress, at most drain_timeout (not at all when called
  // from one of this tracker's callbacks). DeadlineExceeded when the stopper
  // is still busy; it then finishes in the background. Never with mu_ held:
  // it waits for the stopper, which takes mu_.
  absl::Status StopTimer(std::unique_ptr<Timer> timer) ABSL_LOCKS_EXCLUDED(mu_);
  void AwaitCallbacks();

  const IdleCoreConfig config_;
  const bool has_task_executor_;
  CoarseClock coarse_;
  IdleCounters counters_;
  std::atomic<int> running_callbacks_{0};

  // The task executor; null once Close() has dropped it. Checks copy the
  // pointer under the lock and call it without, so that a Close() racing a
  // fire destroys the executor only after that call has returned.
  mutable IdleSpinLock executor_lock_;
  std::shared_ptr<const IdleTaskExecutor> task_executor_
      ABSL_GUARDED_BY(executor_lock_);

  // The activation that refreshes run for: bumped when one starts and when
  // it ends, so a refresh of an ended activation stops re-scheduling itself.
  // The pending refresh's handle, so that the end of an activation on a
  // shared timer cancels it. refresh_paused_: the current activation's
  // refresh is neither scheduled nor running (nothing was tracked when it
  // last ran, or it has not started). All under refresh_lock_, which
  // refreshes take on the worker (never mu_): a refresh that re-schedules
  // either stores its handle before the activation ends (and the end
  // cancels it) or sees the new generation (and cancels it itself); a
  // refresh pauses only after reading tracked == 0 under the lock, and a
  // registration counts itself in `tracked` before it takes the lock to
  // resume, so one of the two always sees the other.
  IdleSpinLock refresh_lock_;
  uint64_t generation_ ABSL_GUARDED_BY(refresh_lock_) = 0;
  Timeout refresh_ ABSL_GUARDED_BY(refresh_lock_);
  bool refresh_paused_ ABSL_GUARDED_BY(refresh_lock_) = true;
  // The timer the current activation's refreshes run on; null while
  // inactive.
  Timer* refresh_timer_ ABSL_GUARDED_BY(refresh_lock_) = nullptr;

  mutable Mutex mu_;
  int64_t active_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // The tracker's clock (null on an application's Timer) and the
  // application's Timer (null on a timer of the tracker's own); both null
  // after Close().
  std::shared_ptr<Clock> clock_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Timer> shared_timer_ ABSL_GUARDED_BY(mu_);
  // The timer of the current activation: owned_timer_, or the shared one;
  // null while inactive.
  Timer* timer_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::unique_ptr<Timer> owned_timer_ ABSL_GUARDED_BY(mu_);
  TimerMetrics last_timer_metrics_ ABSL_GUARDED_BY(mu_);
  IdleEntry* registry_head_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// True while the calling thread runs an on_idle of `core` (or a check of its
// timer): waiting there for that timer to stop would wait for ourselves.
bool InCallbackOf(const IdleCore* core);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_CORE_H_
