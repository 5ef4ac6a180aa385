// timer/idle/idle_context.h
// -----------------------------------------------------------------------------
// Internal. IdleContext: what an idle tracker's entries need from the tracker,
// and nothing more: the validated options, the coarse clock that touch()
// reads and every check refreshes, the counters, the accounting of on_idle
// calls in progress (which the end of an activation waits for), and the task
// executor that on_idle calls are handed to. Users include
// timer/idle_tracker.h.
//
// The idle tracker's parts, each depending only on parts listed above it:
//
//   spin_lock.h, intrusive_list.h, idle_clock.h, idle_metrics.h
//   idle_context.h        what entries need from the tracker (this file)
//   idle_entry.h          one tracked object's state machine
//   idle_refresher.h      the coarse clock's refresh
//   idle_activation.h     the Timer side: which Timer, its refresh, the stop
//   idle_core.h           the registry and the life cycle over it
//   timer/idle_tracker.h  the facade and IdleHandle
//
// Nothing here knows entries, the registry or the Timer's life cycle.
//
// Lifetime: IdleCore creates the context and every IdleEntry shares it, so it
// lives until the last handle is gone. IdleCore::Close() drops the task
// executor; from then on the context holds nothing the application gave, only
// what a late touch() or unregister() may still read or write (the coarse
// clock, the counters).
//
// Memory ordering: the counters are statistics and publish nothing (relaxed
// RMWs). running_callbacks_ counts on_idle calls in progress with acq_rel
// RMWs, and AwaitCallbacks() waits for zero with an acquire load, so the
// waiter sees everything those calls did. The executor pointer is copied and
// dropped under executor_lock_.
//
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_IDLE_CONTEXT_H_
#define TICKWHEEL_TIMER_IDLE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "tickwheel/timer/idle/idle_clock.h"
#include "tickwheel/timer/idle/spin_lock.h"
#include "tickwheel/timer/idle_tracker_metrics.h"

namespace tickwheel::internal {

// IdleTrackerOptions::task_executor.
using IdleTaskExecutor = std::function<void(absl::AnyInvocable<void()>)>;

// Validated IdleTrackerOptions (timer/idle_tracker.h has each field): the
// part that never changes.
struct IdleConfig {
  int64_t default_timeout_nanos = 0;  // > 0
  absl::Duration tick_duration;       // > 0, whole nanoseconds
  int ticks_per_wheel = 0;
  int64_t refresh_nanos = 0;     // >= tick
  absl::Duration drain_timeout;  // >= 0
  std::string thread_name;
};

// The tracker's counters, behind IdleTrackerMetrics (same names).
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

class IdleContext {
 public:
  // `task_executor` may be empty (on_idle then runs on the worker).
  IdleContext(IdleConfig config, IdleTaskExecutor task_executor);
  IdleContext(const IdleContext&) = delete;
  IdleContext& operator=(const IdleContext&) = delete;

  const IdleConfig& config() const { return config_; }

  // ---- The coarse clock. ----

  // What touch() stamps with (IdleHandle caches the cell).
  const CoarseClock& coarse() const { return coarse_; }
  // Publishes the ceiling for a clock reading `now` (the refresh task, every
  // check) and records in worst_clock_lag how far the previous ceiling had
  // fallen behind `now`.
  void RefreshCoarse(int64_t now);
  // Publishes the ceiling for `now` after a time in which nothing refreshed
  // it on purpose (an activation starts, a paused refresh resumes): that gap
  // is no lag and is not recorded.
  void RestartCoarse(int64_t now);

  // ---- Counters. ----

  IdleCounters& counters() { return counters_; }
  // The counters as IdleTrackerMetrics, `active` left at 0 (the activation
  // count is IdleCore's). Relaxed loads: see IdleTrackerMetrics.
  IdleTrackerMetrics Snapshot() const;

  // ---- The task executor. ----

  // Whether on_idle calls go to a task executor; fixed at creation, so a
  // check decides kQueued or kRunning the same way before and after Close().
  bool has_task_executor() const { return has_task_executor_; }
  // The executor, for one call: the caller's reference keeps it alive until
  // that call returns. Null once DropTaskExecutor() has run.
  std::shared_ptr<const IdleTaskExecutor> task_executor() const
      ABSL_LOCKS_EXCLUDED(executor_lock_);
  // Drops the context's reference (IdleCore::Close()). The executor, with
  // its captures, is destroyed here or when the last call in progress
  // returns.
  void DropTaskExecutor() ABSL_LOCKS_EXCLUDED(executor_lock_);

  // ---- on_idle calls in progress. ----

  // Brackets one on_idle call on the calling thread: counts it in progress,
  // and marks the thread as inside one of this tracker's callbacks.
  class CallbackScope {
   public:
    explicit CallbackScope(IdleContext& context);
    ~CallbackScope();
    CallbackScope(const CallbackScope&) = delete;
    CallbackScope& operator=(const CallbackScope&) = delete;

   private:
    IdleContext& context_;
    const IdleContext* const outer_;
  };
  // True while the calling thread runs an on_idle of this tracker: waiting
  // there for this tracker's callbacks would wait for ourselves.
  bool InCallback() const;
  // Waits until no on_idle call of this tracker is in progress.
  void AwaitCallbacks() const;

 private:
  const IdleConfig config_;
  const bool has_task_executor_;
  CoarseClock coarse_;
  IdleCounters counters_;
  std::atomic<int> running_callbacks_{0};
  mutable IdleSpinLock executor_lock_;
  std::shared_ptr<const IdleTaskExecutor> task_executor_
      ABSL_GUARDED_BY(executor_lock_);
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_CONTEXT_H_
