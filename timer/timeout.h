// timer/timeout.h
// -----------------------------------------------------------------------------
// tickwheel::Timeout, the handle to one scheduled task, and TimerTask, what a
// timer runs. Include timer/timer.h, which includes this file.
//
// A Timeout is a reference-counted pointer (two words: the timeout, and the
// timer state that cancel() needs): copying it costs one atomic increment,
// and every copy refers to the same scheduled task. A default-constructed
// Timeout is empty: its queries return false, timer() returns nullptr and
// takeTask() an empty task. Handles may outlive their Timer: isExpired(),
// isCancelled(), cancel() and takeTask() stay safe after the Timer is
// destroyed (cancel() then returns false). timer() is the one exception:
// inside a task it is always safe (nullptr once the Timer is being destroyed,
// even for a task that a task_executor runs after ~Timer), but on a handle
// kept elsewhere it must not be called after the Timer is destroyed.
//
// This class is thread-safe: any thread may call any method on any copy,
// including on one handle object shared by several threads (a deadline that
// both a reply path and an abort path may cancel).

#ifndef TICKWHEEL_TIMER_TIMEOUT_H_
#define TICKWHEEL_TIMER_TIMEOUT_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "tickwheel/base/nanos.h"

namespace tickwheel {

class Timeout;
class Timer;

// A point in time on a timer's clock: with the default clock,
// std::chrono::steady_clock; with TimerOptions::clock, time_since_epoch()
// is that clock's NowNanos() (Timer::now()).
using TimePoint = std::chrono::steady_clock::time_point;

// What the calls that take a delay or a period accept: an absl::Duration, or
// any std::chrono::duration (an integer or floating-point count of any
// period). Each becomes whole nanoseconds, rounded up and saturated, by one
// conversion (base/nanos.h).
template <typename D>
concept TimerDuration = std::same_as<std::remove_cvref_t<D>, absl::Duration> ||
    internal::kIsChronoDuration<std::remove_cvref_t<D>>;

namespace internal {
// A TimerDuration as an absl::Duration; nullopt for a NaN count.
template <TimerDuration D>
std::optional<absl::Duration> AsDuration(const D& d) {
  if constexpr (std::same_as<std::remove_cvref_t<D>, absl::Duration>) {
    return d;
  } else {
    return FromChrono(d);
  }
}
}  // namespace internal

// What a timer runs. Timer::newTimeout() takes any callable of this
// signature (timer/task.h); a TimerTask is what Timeout::takeTask() gives
// back. The task receives its own Timeout, so it can, e.g., reschedule
// itself through timeout.timer().
using TimerTask = absl::AnyInvocable<void(const Timeout&)>;

namespace internal {
struct TimeoutNode;
struct SharedTimerState;
class TimeoutAccess;

}  // namespace internal

class Timeout {
 public:
  Timeout() = default;
  Timeout(const Timeout& other);
  Timeout(Timeout&& other) noexcept
      : node_(std::exchange(other.node_, nullptr)),
        shared_(std::exchange(other.shared_, nullptr)) {}
  Timeout& operator=(const Timeout& other);
  Timeout& operator=(Timeout&& other) noexcept;
  ~Timeout() {
    if (node_ != nullptr) Release();
  }

  // The Timer that scheduled this timeout; nullptr for an empty handle and
  // once the Timer's destructor has started. Safe inside the timeout's own
  // task wherever it runs; elsewhere, must not be called after the Timer has
  // been destroyed.
  Timer* timer() const;

  // True once the worker has claimed the task to run it (it may still be
  // running, or queued on the task executor).
  bool isExpired() const;

  // True after a successful cancel(), and for every timeout returned by
  // Timer::stop() (as in Netty 4.1.111+).
  bool isCancelled() const;

  // True for a timeout made by Timer::newPeriodic(). A periodic timeout
  // never reports isExpired(): it ends only by cancel(), cancelAll() or
  // stop().
  bool isPeriodic() const;

  // When it is due: the deadline it was scheduled with, or the one of the
  // last successful reset(); for a periodic timeout, its next run (during a
  // run, the run's own deadline until the next one is set). TimePoint{} for
  // an empty handle. On the timer's clock (Timer::now()). Safe after the
  // Timer is destroyed.
  TimePoint deadline() const;

  // Moves a pending timeout's deadline to now + `delay` (earlier or later;
  // negative counts as zero; rounded up to whole nanoseconds; huge delays
  // saturate at ~292 years), keeping its task and its
  // handles. True iff it was pending (not expired, cancelled, or returned by
  // stop()) and will now run no earlier than the new deadline, exactly once
  // unless it is cancelled or stopped later. False, changing nothing,
  // otherwise, including for a one-shot timeout from inside its own task.
  // pendingTimeouts() does not change. On a periodic timeout it moves the
  // next run, and the runs go on every period from it, whatever its
  // missed-run policy (MissedRuns); it ends a burst of missed runs there.
  // Of racing reset() calls, each that returns true takes effect in turn;
  // the timeout ends up at the deadline of the last one.
  // Cost: never allocates and never waits for the worker. A later deadline
  // is two atomic read-modify-writes on the timeout and a store: the worker
  // hears of it only when the old deadline comes, and files the timeout
  // again then. An earlier deadline is handed to the worker as well (a push
  // on a queue), and wakes it only if it sleeps past the new deadline.
  bool reset(absl::Duration delay) const;
  // Any std::chrono::duration, converted as newTimeout() does
  // (base/nanos.h); false, changing nothing, for a NaN count.
  template <typename Rep, typename Period>
  bool reset(std::chrono::duration<Rep, Period> delay) const {
    const std::optional<absl::Duration> d = internal::FromChrono(delay);
    return d.has_value() && reset(*d);
  }
  // reset() to an absolute deadline on the timer's clock. A deadline in the
  // past is taken as now: it runs promptly, and deadline() reads the time of
  // the call.
  bool resetAt(TimePoint deadline) const;

  // Cancels the task if it is still pending. Returns true iff this call moved
  // it from pending to cancelled: of any number of racing cancel() calls,
  // through one handle object or several copies, at most one returns true.
  // Then the task will never run; it has been destroyed (with its captures)
  // on the calling thread, and the timer's pendingTimeouts() has dropped by
  // one, before this returns. A periodic timeout is pending until it ends:
  // cancel() stops its runs, and if a run is in progress (cancel() from the
  // task itself, say), that run is its last, and its captures are destroyed
  // when the run returns. Do not call cancel() while holding a lock that
  // the task's captures take in their destructors.
  // Returns false if the task already expired, was cancelled, or was returned
  // by stop(), and for an empty handle.
  // The timeout's memory is reclaimed by this thread when the worker has not
  // taken it yet, else by the worker: within about a tick while timeouts are
  // being scheduled or cancelled, and at the latest when a few thousand
  // cancelled timeouts wait for it (worker/worker.h, "Bounded backlogs"). A
  // cancel() wakes the worker only at that bound.
  // Cost: lock-free; four atomic read-modify-writes on cache lines this
  // thread usually owns, no allocation.
  bool cancel() const;

  // For a timeout returned by Timer::stop(): moves the task out, so that the
  // caller can run it elsewhere or re-schedule it. Returns an empty TimerTask
  // in every other case, including a second call. Thread-safe: of two racing
  // calls, exactly one gets the task. Never throws, and never loses the
  // task: a callable whose move constructor may throw was boxed on the heap
  // when it was scheduled, and is handed over in its box.
  TimerTask takeTask() const;

  // False for an empty handle.
  explicit operator bool() const { return node_ != nullptr; }

  // Handles are equal when they refer to the same scheduled task.
  friend bool operator==(const Timeout& a, const Timeout& b) {
    return a.node_ == b.node_;
  }

 private:
  friend class internal::TimeoutAccess;
  // Adopts one reference that the caller already holds on `node`.
  Timeout(internal::TimeoutNode* node, internal::SharedTimerState* shared)
      : node_(node), shared_(shared) {}
  // Drops this handle's reference (the last one frees the timeout).
  void Release();
  // reset() and resetAt(): `nanos` is a delay, or with `absolute` a clock
  // reading.
  bool Reset(int64_t nanos, bool absolute) const;

  internal::TimeoutNode* node_ = nullptr;
  internal::SharedTimerState* shared_ = nullptr;
};

namespace internal {

// The facade's access to handles: the engine hands out nodes, each with one
// reference, and the facade wraps them.
class TimeoutAccess {
 public:
  static Timeout Adopt(TimeoutNode* node, SharedTimerState* shared) {
    return Timeout(node, shared);
  }
  static TimeoutNode* Node(const Timeout& t) { return t.node_; }
  // Empties `t` without dropping its reference, which the caller takes.
  static TimeoutNode* Disown(Timeout& t) {
    t.shared_ = nullptr;
    return std::exchange(t.node_, nullptr);
  }
};

}  // namespace internal
}  // namespace tickwheel

// Handles hash by the timeout they refer to, so they can key unordered
// containers (equal handles: the same scheduled task).
template <>
struct std::hash<tickwheel::Timeout> {
  size_t operator()(const tickwheel::Timeout& t) const noexcept {
    return std::hash<const void*>()(
        tickwheel::internal::TimeoutAccess::Node(t));
  }
};

#endif  // TICKWHEEL_TIMER_TIMEOUT_H_
