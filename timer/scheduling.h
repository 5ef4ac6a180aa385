// timer/scheduling.h
// -----------------------------------------------------------------------------
// The scheduling calls of both timer types, written once: newTimeout(),
// newTimeoutAt() and newPeriodic() of tickwheel::Timer (timer/timer.h) and
// tickwheel::LocalTimer (timer/local_timer.h), each of which derives from
// SchedulingCalls<itself>. Include the timer's own header; a program calls
// these members on its Timer or LocalTimer and never names SchedulingCalls.
//
// Where the two timer types differ, the calls below say "On a Timer" and
// "On a LocalTimer":
//   Threads. On a Timer, any thread may call them, concurrently; what a
//   thread did before the call returned happens-before the task runs, on the
//   worker thread (or TimerOptions::task_executor). On a LocalTimer, the
//   owner thread only (timer/local_timer.h, "Threading"); the task runs in
//   an advance() on that thread.
//   When. On a Timer, at the first tick boundary at or after the deadline
//   (with TimerOptions::slack below the tick, within the slack). On a
//   LocalTimer, in the first advance() whose clock reading has reached its
//   run time (timer/local_timer.h, "When a task runs"). Never before the
//   deadline on either.
//
// A call that is wrong at compile time (a task that is not one, a delay that
// is not a duration, a newPeriodic() without a period) fails with one
// static_assert that names the fix, not a list of every overload: the
// overloads at the end of the class, the one place those errors are written.

#ifndef TICKWHEEL_TIMER_SCHEDULING_H_
#define TICKWHEEL_TIMER_SCHEDULING_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/missed_runs.h"  // MissedRuns, for newPeriodic()
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/schedule.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/timer/task.h"
#include "tickwheel/timer/timeout.h"

namespace tickwheel {

namespace internal {
class LibraryTimeouts;
}  // namespace internal

// `TimerT` (Timer or LocalTimer) provides one private call that takes a
// callable that is not empty to its engine:
//   absl::StatusOr<Timeout> Schedule(internal::TaskEmplacer emplace,
//                                    void* callable,
//                                    const internal::DeadlineSpec& when);
// and makes SchedulingCalls<TimerT> a friend. The calls are resolved at
// compile time (no virtual call); the base holds no state.
template <typename TimerT>
class SchedulingCalls {
 public:
  // Schedules `task` to run once, `delay` from now (negative counts as zero;
  // rounded up to whole nanoseconds; InfiniteDuration and other huge delays
  // saturate at ~292 years and never wrap into the past). On a Timer, the
  // first call starts the worker thread.
  //
  // `task` is any TimerTaskCallable (timer/task.h): invocable as
  // `void(const Timeout&)` or `void()`. If copying or moving `task` into the
  // timeout throws, the exception propagates and nothing is scheduled.
  // InvalidArgument: `task` is empty (a null function pointer, an empty
  //   std::function or TimerTask).
  // FailedPrecondition: the timer was stopped.
  // ResourceExhausted: the pending count would exceed max_pending_timeouts
  //   (the message names both numbers), or no memory for the timeout, or (a
  //   Timer's first call) the worker thread cannot start.
  // Cost on a Timer: a thread-local pop of a pool cell, one clock read, one
  // atomic RMW on the calling thread's shard of the pending count and one
  // CAS on its shard's ring; lock-free, no allocation while the pool has
  // cells and the callable fits in the cell (docs/BENCHMARKS.md has the
  // measured figures). It wakes the worker (a mutex and a condition
  // variable) only when the new deadline is earlier than the one the
  // sleeping worker planned to wake for, or when the calling thread's ring
  // of 16384 timeouts waiting for the worker is full.
  // Cost on a LocalTimer: a thread-local pop of a pool cell, one clock read,
  // one atomic add on the pending count (a CAS loop with
  // max_pending_timeouts set), one CAS on the node, and an O(1) insertion
  // into the wheel; no lock, no wake-up, no allocation while the pool has
  // cells and the callable fits in the cell.
  template <TimerTaskCallable F>
  absl::StatusOr<Timeout> newTimeout(F&& task, absl::Duration delay) {
    return ScheduleTask(std::forward<F>(task),
                        {.nanos = internal::DelayNanos(delay)});
  }
  // Any std::chrono::duration: integer counts of any period converted
  // exactly, floating-point counts in long double, each rounded up to whole
  // nanoseconds and saturated (base/nanos.h). InvalidArgument for a NaN
  // count.
  template <TimerTaskCallable F, typename Rep, typename Period>
  absl::StatusOr<Timeout> newTimeout(F&& task,
                                     std::chrono::duration<Rep, Period> delay) {
    const std::optional<absl::Duration> d = internal::FromChrono(delay);
    if (!d.has_value()) return internal::NanError("newTimeout", "delay");
    return newTimeout(std::forward<F>(task), *d);
  }
  // A TimerTask, or what converts to one (nullptr: an empty task, refused).
  absl::StatusOr<Timeout> newTimeout(TimerTask task, absl::Duration delay) {
    return ScheduleTask(std::move(task),
                        {.nanos = internal::DelayNanos(delay)});
  }
  template <typename Rep, typename Period>
  absl::StatusOr<Timeout> newTimeout(TimerTask task,
                                     std::chrono::duration<Rep, Period> delay) {
    const std::optional<absl::Duration> d = internal::FromChrono(delay);
    if (!d.has_value()) return internal::NanError("newTimeout", "delay");
    return newTimeout(std::move(task), *d);
  }

  // Schedules `task` to run once at `deadline`, a point on this timer's
  // clock (now()). A deadline in the past (TimePoint::min() included) is
  // taken as now(): it runs promptly, and deadline() and the lateness it
  // records count from the call. As newTimeout() otherwise, with the same
  // errors and cost.
  template <TimerTaskCallable F>
  absl::StatusOr<Timeout> newTimeoutAt(F&& task, TimePoint deadline) {
    return ScheduleTask(std::forward<F>(task),
                        internal::AbsoluteSpec(deadline));
  }

  // Schedules `task` to run at a fixed rate: at start + initial_delay +
  // k * period for k = 0, 1, 2, ..., where start is the time of the call.
  // Never early; runs never overlap, also with a Timer's task_executor.
  // When runs fall behind by a whole period or more (a slow task, a busy
  // worker, a suspended process, a loop that called advance() late),
  // `missed_runs` decides (base/missed_runs.h has the exact rules):
  //   MissedRuns::kSkip   (the default) the missed runs are skipped: it runs
  //                       once, then resumes at the next grid time in the
  //                       future;
  //   MissedRuns::kBurst  the missed runs run at once, back to back (on a
  //                       LocalTimer, in that advance()), then the grid goes
  //                       on; of more than kMaxBurstRuns missed runs, only
  //                       the kMaxBurstRuns latest run;
  //   MissedRuns::kDelay  the missed runs are skipped and the grid moves:
  //                       the next run is one period after the late one.
  // Otherwise a LocalTimer's advance() runs it once, unless a task reset()
  // it meanwhile (see LocalTimer::advance()).
  // Each run, burst runs included, counts in metrics().expired (and in a
  // LocalTimer's advance() result) and records its lateness from its own
  // grid time. The task may take its Timeout to cancel itself (then that
  // run is its last, also within a burst) or reset() its next run (the grid
  // restarts from it, under every policy, and a burst ends there).
  // A periodic timeout counts as one pending timeout until it ends, which is
  // only by cancel(), cancelAll() or stop() (which returns it, isCancelled(),
  // with its task inside for takeTask()); it never reports isExpired(). One
  // allocation for its task, one node for all its runs; the policy costs
  // nothing more.
  //
  // Either duration may be an absl::Duration or any std::chrono::duration,
  // converted as newTimeout() does; a period below 1 ns is rounded up to
  // 1 ns.
  // InvalidArgument: `period` <= 0 or infinite, either duration is NaN, or
  //   `task` is empty; other errors as newTimeout().
  template <TimerTaskCallable F, TimerDuration D1, TimerDuration D2>
  absl::StatusOr<Timeout> newPeriodic(
      F&& task, D1 initial_delay, D2 period,
      MissedRuns missed_runs = MissedRuns::kSkip) {
    absl::StatusOr<internal::DeadlineSpec> when =
        internal::PeriodicSpec(initial_delay, period, missed_runs);
    if (!when.ok()) return when.status();
    return ScheduleTask(std::forward<F>(task), *when);
  }

  // What is not a task, or not a delay: one readable error each, instead of
  // a list of every overload (internal::TaskError explains which).
  template <typename F, typename... Args>
  requires(!TimerTaskCallable<F> && !std::is_convertible_v<F, TimerTask>)
      absl::StatusOr<Timeout> newTimeout(F&&, Args&&...) {
    internal::TaskError<F>();
    return absl::InternalError("unreachable");
  }
  template <typename F, typename... Args>
  requires(!TimerTaskCallable<F> && !std::is_convertible_v<F, TimerTask>)
      absl::StatusOr<Timeout> newTimeoutAt(F&&, Args&&...) {
    internal::TaskError<F>();
    return absl::InternalError("unreachable");
  }
  template <typename F, typename... Args>
  requires(!TimerTaskCallable<F> && !std::is_convertible_v<F, TimerTask>)
      absl::StatusOr<Timeout> newPeriodic(F&&, Args&&...) {
    internal::TaskError<F>();
    return absl::InternalError("unreachable");
  }
  template <typename F, typename D>
  requires((TimerTaskCallable<F> ||
            std::is_convertible_v<F, TimerTask>)&&!TimerDuration<D>)
      absl::StatusOr<Timeout> newTimeout(F&&, D&&) {
    static_assert(internal::kAlwaysFalse<D>,
                  "tickwheel: a delay is an absl::Duration or a "
                  "std::chrono::duration (e.g. absl::Seconds(1), 1s, 250ms)");
    return absl::InternalError("unreachable");
  }
  template <typename F, typename D1, typename D2, typename... M>
  requires(TimerTaskCallable<F> && (!TimerDuration<D1> || !TimerDuration<D2>))
      absl::StatusOr<Timeout> newPeriodic(F&&, D1&&, D2&&, M&&...) {
    static_assert(internal::kAlwaysFalse<D1>,
                  "tickwheel: newPeriodic's initial delay and period are "
                  "each an absl::Duration or a std::chrono::duration");
    return absl::InternalError("unreachable");
  }
  // A task with no period (one duration, or none): one line that names the
  // form, where the overload set would list every candidate.
  template <typename F, typename... D>
  requires((TimerTaskCallable<F> || std::is_convertible_v<F, TimerTask>)&&(
      sizeof...(D) < 2)) absl::StatusOr<Timeout> newPeriodic(F&&, D&&...) {
    static_assert(internal::kAlwaysFalse<F>,
                  "tickwheel: newPeriodic needs an initial delay and a "
                  "period: newPeriodic(task, initial_delay, period"
                  "[, missed_runs])");
    return absl::InternalError("unreachable");
  }
  template <typename F, typename D1, typename D2, typename M>
  requires(TimerTaskCallable<F>&& TimerDuration<D1>&& TimerDuration<D2> &&
           !std::is_same_v<std::remove_cvref_t<M>, MissedRuns>)
      absl::StatusOr<Timeout> newPeriodic(F&&, D1&&, D2&&, M&&) {
    static_assert(internal::kAlwaysFalse<M>,
                  "tickwheel: newPeriodic's last argument is a "
                  "tickwheel::MissedRuns (kSkip, kBurst or kDelay)");
    return absl::InternalError("unreachable");
  }

 protected:
  SchedulingCalls() = default;
  ~SchedulingCalls() = default;

 private:
  // tickwheel's own components that run on an application's timer (the idle
  // tracker, the sleeps of timer/coro.h and timer/asio.h) schedule through
  // ScheduleTask() (timer/internal/library_timeouts.h).
  friend class internal::LibraryTimeouts;

  // Every call above ends here: `task` and `when` to the timer's own
  // Schedule(), an empty callable refused first (internal::ScheduleCallable).
  template <typename F>
  absl::StatusOr<Timeout> ScheduleTask(F&& task,
                                       const internal::DeadlineSpec& when) {
    return internal::ScheduleCallable(
        std::forward<F>(task), when,
        [this](internal::TaskEmplacer emplace, void* callable,
               const internal::DeadlineSpec& spec) {
          return static_cast<TimerT*>(this)->Schedule(emplace, callable, spec);
        });
  }
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_SCHEDULING_H_
