// timer/coro.h
// -----------------------------------------------------------------------------
// Coroutine sleeps on a Timer or a LocalTimer: SleepFor() and SleepUntil()
// return an Awaitable, which any C++20 coroutine can co_await; it yields an
// absl::Status that says why the sleep ended.
//
// Example:
//
//   Task Poll(tickwheel::Timer& timer, std::stop_token stop) {  // your type
//     while (true) {
//       absl::Status s = co_await tickwheel::SleepFor(timer, 1s, stop);
//       if (!s.ok()) co_return;   // Cancelled: stop requested; or stopped
//       Refresh();                // on the timer's worker thread
//     }
//   }
//
// What co_await yields:
//   OK                  the time came. The coroutine resumes where the
//                       timer's tasks run: on its worker thread, or through
//                       TimerOptions::task_executor.
//   Cancelled           `stop` was requested first. Requested before the
//                       co_await: no suspension. Requested while suspended:
//                       the sleep's timeout is moved to now (reset()), so the
//                       coroutine resumes as an expired task does, at the
//                       next tick end (or within TimerOptions::slack), never
//                       inside request_stop().
//   FailedPrecondition  the timer is stopped: at the co_await (no
//                       suspension), or by stop() or ~Timer while suspended:
//                       the coroutine resumes on the thread that stops the
//                       timer, before stop() returns, and the sleep is not
//                       among the timeouts stop() returns. Also when a
//                       task_executor destroys the sleep's task without
//                       running it: it resumes there.
//   ResourceExhausted   max_pending_timeouts is reached (no suspension).
//   PermissionDenied    on a LocalTimer, awaited off its owner thread (no
//                       suspension; timer/local_timer.h, "Threading").
//   InvalidArgument     a std::chrono delay with a NaN count (no
//                       suspension).
//
// A suspended sleep is one pending timeout, a library timeout
// (timer/internal/library_timeouts.h): it counts in pendingTimeouts() and
// against max_pending_timeouts, cancelAll() passes it by, and stop() ends it
// instead of returning it. Exactly one of the expiry, the stop request and
// the timer's stop resumes the coroutine, exactly once: the timeout's task
// resumes it when it runs (OK, or Cancelled when stop was requested), and
// its destructor when the timer destroys it unrun (FailedPrecondition); the
// stop callback only moves the deadline.
//
// Lifetime and cost. The Awaitable lives in the coroutine frame (as the
// operand of co_await). A sleep that suspends costs its timeout's node, as
// newTimeout() with a small task, and one small block (the state the
// timeout's task shares with the Awaitable, so that the task may outlive
// the frame). A coroutine resumed with FailedPrecondition by stop() runs
// inside stop(): it must not destroy the Timer there. If the sleep ends
// while co_await is still suspending (a delay of zero on a running worker,
// or a stop() racing the co_await), the coroutine goes on without
// suspending, on its own thread.
//
// Destroying a coroutine suspended in a sleep (how a task group or a
// cancelled asio::co_spawn parent cancels it) cancels the sleep's timeout,
// exactly once: it no longer counts in pendingTimeouts(), and nothing
// resumes the frame afterwards, neither its expiry, nor stop(), nor the
// timer's destructor. The cancel() races the expiry as any cancel() does;
// when the expiry has won (the task is running, or waits in a
// task_executor), the task finds the sleep abandoned and resumes nothing.
// What no library can make safe is a destruction racing the resumption
// itself: destroy the coroutine where the timer resumes it (a LocalTimer's
// owner thread; a Timer's task_executor or worker thread), or where it is
// otherwise known not to be resumed meanwhile.
//
// On a LocalTimer (timer/local_timer.h) the same, on its owner thread: the
// co_await schedules (an owner-only call) and the coroutine resumes inside
// advance() (OK, or Cancelled) on that thread. A stop request from the
// owner thread resets the sleep's timeout to now and tells the timer, so
// the loop's next pollTimeoutMs() is 0 and its next advance() resumes the
// coroutine, Cancelled, without waiting for the end of the tick. One from
// another thread resets the timeout too (the node's reset is safe from any
// thread), but nothing wakes the loop: the coroutine resumes in an
// advance() of the owner at or after that tick's end, as a cross-thread
// cancel() takes effect there. A loop that waits long and takes stop requests
// from other threads wakes itself where it requests the stop (an eventfd write,
// say). stop() and ~LocalTimer end suspended sleeps with FailedPrecondition on
// the owner thread before they return; after a stop() from a task, when
// that advance() returns.
//
// Any coroutine type can await it: it asks nothing of the promise. An Asio
// coroutine (asio::awaitable), which awaits only Asio operations, uses
// AsyncSleep() of timer/asio.h instead.
//
// Thread-safety: an Awaitable is awaited once, by one coroutine. The timer
// and the stop source may be used from any thread meanwhile.

#ifndef TICKWHEEL_TIMER_CORO_H_
#define TICKWHEEL_TIMER_CORO_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <atomic>
#include <chrono>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/timeout.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {

class Awaitable;
class LocalTimer;  // timer/local_timer.h, //timer:local_timer

namespace internal {

// What a sleep's task shares with its Awaitable: the coroutine, the stop
// token, the status; and who is done with it (timer/coro.cc).
struct SleepState;

// A sleep's task: the timer runs it when the sleep's time comes, and it ends
// the sleep (OK, or Cancelled after a stop request); destroyed unrun (by
// stop(), ~Timer, or a task_executor that drops it), it ends the sleep with
// FailedPrecondition. When the coroutine was destroyed meanwhile it resumes
// nothing and frees the state. One pointer, moved without throwing: it is
// stored inside the timeout.
class SleepTask {
 public:
  explicit SleepTask(SleepState* state) : state_(state) {}
  SleepTask(SleepTask&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)) {}
  SleepTask& operator=(SleepTask&&) = delete;
  ~SleepTask();

  void operator()();
  // Forgets the state, for a task that was never scheduled.
  void Release() { state_ = nullptr; }

 private:
  SleepState* state_;
};

// How a sleep reaches its timer. Any timer whose timeouts are Timeout
// handles can be slept on through one of these; SleepTargetOf(Timer&) is
// the Timer's.
struct SleepTarget {
  void* timer = nullptr;
  // Makes `task` a library timeout of `*timer`, due as `when` says (a delay,
  // or a reading of the timer's clock), and returns its handle; or returns
  // the error of newTimeout(), leaving `task` unmoved.
  absl::StatusOr<Timeout> (*schedule)(void* timer, SleepTask& task,
                                      DeadlineSpec when) = nullptr;
  // On a stop request, on the requesting thread: has the timer run the
  // sleep's task promptly, without running it here (the Timer's: reset()
  // to now, which any thread may call). A no-op when the task has run or
  // is running, or the timer has stopped.
  void (*expedite)(void* timer, const Timeout& timeout) = nullptr;
};

SleepTarget SleepTargetOf(Timer& timer);
// The LocalTimer's (defined with it, in //timer:local_timer): schedules on
// the owner thread; a stop request resets the timeout to now from whichever
// thread it comes, and the owner's next advance() runs the task.
SleepTarget SleepTargetOf(LocalTimer& timer);

// The expedite of both: Timeout::reset() to now, which only moves the
// deadline (the node's protocol makes it safe from any thread; the task
// runs where the timer runs tasks).
void ExpediteByReset(void* timer, const Timeout& timeout);

template <typename T>
concept SleepableTimer = std::same_as<T, Timer> || std::same_as<T, LocalTimer>;

}  // namespace internal

// The operand of co_await that SleepFor() and SleepUntil() return.
class Awaitable {
 public:
  // A sleep on `target` until `when`, ended early by `stop`.
  Awaitable(internal::SleepTarget target, internal::DeadlineSpec when,
            std::stop_token stop)
      : target_(target), when_(when), stop_(std::move(stop)) {}
  // A sleep that ends at the co_await with `error` (not OK), unsuspended.
  explicit Awaitable(absl::Status error) : status_(std::move(error)) {}

  // Movable until it is awaited, for coroutine libraries that wrap what
  // they await.
  Awaitable(Awaitable&& other) noexcept
      : target_(other.target_),
        when_(other.when_),
        stop_(std::move(other.stop_)),
        status_(std::move(other.status_)) {}
  Awaitable& operator=(Awaitable&&) = delete;
  // Destroyed with its coroutine while suspended (the frame destroyed, as
  // structured concurrency cancels): cancels the sleep's timeout, once; a
  // task that has expired meanwhile finds the sleep abandoned and resumes
  // nothing. Otherwise nothing. Cost then: one cancel(), one atomic RMW.
  ~Awaitable();

  // True when the sleep ends without suspending: an error made it, or
  // `stop` is already requested (Cancelled).
  bool await_ready() noexcept;
  // Schedules the sleep's timeout and registers the stop callback. False,
  // not suspending, when scheduling fails or the sleep has already ended.
  bool await_suspend(std::coroutine_handle<> coroutine);
  // Why the sleep ended (see the file comment).
  absl::Status await_resume();

 private:
  // The stop callback: has the timer run the task now (target_.expedite),
  // so that the timer resumes the coroutine; never resumes it itself.
  struct OnStop {
    Awaitable* sleep;
    void operator()() const noexcept;
  };

  internal::SleepTarget target_;
  internal::DeadlineSpec when_;
  std::stop_token stop_;  // moved into state_ when the sleep suspends
  // Why a sleep that never suspended ended (an error, or Cancelled).
  absl::Status status_;
  // From await_suspend() until await_resume() (or ~Awaitable, when the
  // coroutine is destroyed suspended): shared with the sleep's task, which
  // may outlive this object. The ground rules are timer/coro.cc's.
  internal::SleepState* state_ = nullptr;
  // Set before the coroutine is the task's to resume.
  Timeout timeout_;
  // Registered after timeout_ is set (the callback reads it); deregistered
  // in await_resume() and ~Awaitable, which wait for a callback running on
  // another thread.
  std::optional<std::stop_callback<OnStop>> on_stop_;
};

// Sleeps on `timer` for `delay` (negative counts as zero, rounded up to
// whole nanoseconds, huge delays saturate as in newTimeout()). `stop` may end
// it early. See the file comment for what co_await yields.
inline Awaitable SleepFor(Timer& timer, absl::Duration delay,
                          std::stop_token stop = {}) {
  return Awaitable(internal::SleepTargetOf(timer),
                   {.nanos = internal::DelayNanos(delay)}, std::move(stop));
}
// On a LocalTimer: awaited on its owner thread (scheduling is an owner-only
// call); see "On a LocalTimer" in the file comment. Needs
// //timer:local_timer, as any use of a LocalTimer does.
inline Awaitable SleepFor(LocalTimer& timer, absl::Duration delay,
                          std::stop_token stop = {}) {
  return Awaitable(internal::SleepTargetOf(timer),
                   {.nanos = internal::DelayNanos(delay)}, std::move(stop));
}

// Any std::chrono::duration, converted as newTimeout() converts it
// (base/nanos.h); a NaN count ends the sleep with InvalidArgument. On a
// Timer or a LocalTimer.
template <internal::SleepableTimer T, typename Rep, typename Period>
Awaitable SleepFor(T& timer, std::chrono::duration<Rep, Period> delay,
                   std::stop_token stop = {}) {
  const std::optional<absl::Duration> d = internal::FromChrono(delay);
  if (!d.has_value()) {
    return Awaitable(absl::InvalidArgumentError(
        "SleepFor: the delay is NaN; pass a number "
        "of seconds (or of any std::chrono period)"));
  }
  return SleepFor(timer, *d, std::move(stop));
}

// Sleeps on `timer` until `deadline`, a point on the timer's clock (its
// now()); a deadline in the past is taken as now, as in newTimeoutAt(). A
// std::chrono::time_point of steady_clock in any coarser unit
// (milliseconds, seconds) converts to TimePoint as it is passed.
inline Awaitable SleepUntil(Timer& timer, TimePoint deadline,
                            std::stop_token stop = {}) {
  return Awaitable(internal::SleepTargetOf(timer),
                   internal::AbsoluteSpec(deadline), std::move(stop));
}
// On a LocalTimer, from its owner thread.
inline Awaitable SleepUntil(LocalTimer& timer, TimePoint deadline,
                            std::stop_token stop = {}) {
  return Awaitable(internal::SleepTargetOf(timer),
                   internal::AbsoluteSpec(deadline), std::move(stop));
}

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_CORO_H_
