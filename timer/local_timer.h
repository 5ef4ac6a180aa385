// timer/local_timer.h
// -----------------------------------------------------------------------------
// tickwheel::LocalTimer: the hashed wheel of tickwheel::Timer, driven by an
// event loop on the loop's own thread, with no thread of its own. Include
// "tickwheel/timer/local_timer.h"; Bazel //timer:local_timer, CMake
// tickwheel::local_timer.
//
// For a program that already runs a loop (epoll, poll, io_uring, a GUI's):
// the loop asks how long it may wait (pollTimeoutMs()), waits for I/O at
// most that long, and calls advance(), which runs the tasks that are due,
// in deadline order, on the loop's thread. Nothing runs anywhere else and
// nothing needs a lock: a task may touch the loop's own state.
//
// Example (examples/epoll_local_timer.cc is a whole program):
//
//   auto timer = tickwheel::LocalTimer::Create().value();   // 1 ms tick
//   timer->newTimeout([&conn] { conn.Close(); }, absl::Seconds(30)).value();
//   for (;;) {
//     int n = epoll_wait(epfd, events, kMaxEvents, timer->pollTimeoutMs());
//     ...                          // handle the n events
//     timer->advance();            // run what is due
//   }
//
// When a task runs
//   In the first advance() whose clock reading has reached its run time,
//   never before its deadline. With the default slack (one tick) the run
//   time is the end of the tick its deadline falls in: tasks run at tick
//   ends, as with Timer. With LocalTimerOptions::slack below the tick it is
//   the deadline itself, and nextWakeup() batches: it names the earliest
//   deadline plus the slack, so deadlines within the slack of each other
//   share one wake-up. A loop that calls advance() late runs what is due
//   late, all of it, in deadline order.
//   nextWakeup() is never later than the earliest run time, but it may be
//   earlier: a timeout due beyond one turn of the wheel (tick_duration *
//   ticks_per_wheel) moves down a level of the wheel first, in an advance()
//   that may run nothing. That happens at most once per level the timeout
//   passes through (each upper level covers 64 times the span of the one
//   below), so a far timeout costs a loop that follows the plan a few early
//   wake-ups in its life, never one per tick. Timeouts that share an upper
//   bucket share its wake-up.
//
// How it works
//   The same parts as a Timer's worker (docs/DESIGN.md, "LocalTimer"): the
//   wheel with its levels, its driver and task runner, the timeout node and
//   its state machine. newTimeout() files the node into the wheel itself,
//   without the lanes other threads use; advance() turns the wheel to the
//   clock; nextWakeup() reads the wheel's plan from its occupancy bitmaps.
//
// Threading
//   A LocalTimer belongs to its owner thread: the thread named by
//   LocalTimerOptions::owner, or else the first thread that calls
//   newTimeout(), newTimeoutAt(), newPeriodic(), advance(), nextWakeup(),
//   pollTimeoutMs(), cancelAll() or stop(); it may be created on another.
//   Those calls, and Timeout::reset() and resetAt() on its timeouts, are
//   for the owner thread only: a reset() elsewhere could move a deadline
//   before the wait the loop has planned. Every build checks the first
//   group, with one compare of thread ids per call:
//     * a scheduling call (newTimeout(), newTimeoutAt(), newPeriodic(), and
//       so a coroutine sleep or an AsyncSleep()) from another thread
//       returns PermissionDenied and schedules nothing. The code is its
//       own: FailedPrecondition means the timer is stopped, ResourceExhausted
//       the limit. What to do: hand the call to the owner's loop (post it
//       there), or name the right owner.
//     * advance(), nextWakeup(), pollTimeoutMs(), cancelAll() and stop(),
//       which return no status, abort with a message: a neutral answer
//       (0 run, nothing pending) would let the loop go on believing it.
//   isOwnerThread() asks first, from any thread. These are thread-safe,
//   from any thread: Timeout::cancel() (and the handle's other queries),
//   pendingTimeouts(), metrics(), now(), isOwnerThread(), ownerThread().

//   Timeout::cancel() from another thread races advance() as it races a
//   Timer's worker: exactly one of them wins each timeout (a cancel() that
//   returns true means the task never runs; one that returns false came
//   too late). The winning cancel() destroys the task before it returns,
//   but for a periodic run in progress, whose task goes when the run
//   returns; the timeout's memory goes at the owner's next advance() or
//   nextWakeup(). cancel() does not wake the loop: a loop that planned its
//   wait for a timeout cancelled meanwhile wakes and finds nothing to run.
//   On the owner thread, outside advance(), a winning cancel() settles the
//   timeout before it returns: its memory goes too, and nextWakeup() no
//   longer counts it (cost: one atomic compare-and-swap and the unlink from
//   its bucket, O(1)).
//
//   Inside a task (during advance()) the task may schedule, cancel, reset
//   and cancelAll() on its LocalTimer. What it schedules is filed, but runs
//   in a later advance(), never in this one, even when it is due already.
//   advance() from a task returns 0; nextWakeup() returns now() and
//   pollTimeoutMs() 0 (the plan is made once advance() returns); stop()
//   from a task ends the advance() after that task (see stop()). A task
//   must not destroy its LocalTimer (that aborts with a message).
//   Timeout::timer() is nullptr for a LocalTimer's timeouts: a task that
//   wants its timer captures it.
//
// Errors are absl::Status values; no exception crosses the API. A task that
// throws is logged (timer/log.h) and advance() goes on with the next.
//
// Lifetime: destroying a LocalTimer destroys the tasks not yet run, without
// running them. Timeout handles may outlive it, as a Timer's may
// (timer/timeout.h), but for timer(), which must not be called on a handle
// once its LocalTimer is destroyed.
//
// This class is thread-compatible, with the exceptions above.

#ifndef TICKWHEEL_TIMER_LOCAL_TIMER_H_
#define TICKWHEEL_TIMER_LOCAL_TIMER_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/missed_runs.h"  // MissedRuns, for newPeriodic()
#include "tickwheel/base/nanos.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/internal/schedule.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/timer/log.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/scheduling.h"
#include "tickwheel/timer/task.h"
#include "tickwheel/timer/timeout.h"

namespace tickwheel {

namespace internal {
class LibraryTimeouts;
class LocalEngine;
}  // namespace internal

struct LocalTimerOptions {
  // The wheel's resolution: with the default slack, tasks run at tick ends.
  // Must be > 0 (at least 1 ns). Finer than Timer's default, since a tick
  // costs no thread wake-up here: advance() at any time catches up every
  // tick that has ended.
  absl::Duration tick_duration = absl::Milliseconds(1);
  // Buckets in the wheel's first level. Must be > 0 and at most 2^30;
  // rounded up to a power of two. Deadlines beyond one turn
  // (tick_duration * ticks_per_wheel) sit in coarser levels and move down
  // as their time comes (see nextWakeup()). 24 bytes per bucket.
  int ticks_per_wheel = 512;
  // As TimerOptions::slack: how late past its deadline a task may run, at
  // most a tick. Empty (the default) or at or above tick_duration: one tick,
  // tasks run at tick ends. Below the tick, a task is due at its deadline
  // and nextWakeup() allows the slack for batching. Must be >= 0.
  std::optional<absl::Duration> slack;
  // Upper bound on pendingTimeouts(); <= 0 means unlimited. newTimeout()
  // returns ResourceExhausted instead of exceeding it.
  int64_t max_pending_timeouts = 0;
  // The time source. Empty means the monotonic real clock
  // (RealClock::Shared()); tests pass a ManualClock (timer/manual_clock.h).
  // A LocalTimer only reads it: it never sleeps on it.
  std::shared_ptr<Clock> clock;
  // The owner thread (see "Threading"): the only thread that may schedule,
  // advance() and stop this timer. Empty (std::thread::id(), the default):
  // the first thread that makes one of those calls. Name it when the timer
  // is made on one thread for a loop that runs on another, so that a call
  // from a wrong thread is refused from the start instead of binding it.
  std::thread::id owner;
};

class LocalTimer : public SchedulingCalls<LocalTimer> {
 public:
  // Validates `options` and makes a timer; reads the clock once (startTime,
  // from which ticks count). Starts no thread.
  // InvalidArgument: as Timer::Create() for tick_duration, ticks_per_wheel
  //   and slack.
  // ResourceExhausted: no memory for the wheel.
  static absl::StatusOr<std::unique_ptr<LocalTimer>> Create(
      LocalTimerOptions options = {});

  // Destroys the tasks not yet run, without running them (a periodic
  // timeout's too). On the owner thread, or on another once the owner is
  // done with the timer. Never from one of its own tasks: that aborts with
  // a message. Cost: O(pending log pending).
  ~LocalTimer();

  LocalTimer(const LocalTimer&) = delete;
  LocalTimer& operator=(const LocalTimer&) = delete;

  // newTimeout(), newTimeoutAt() and newPeriodic(), in every duration and
  // time-point form: SchedulingCalls (timer/scheduling.h) documents each,
  // with its errors and its cost on a LocalTimer. Owner thread only; the
  // task runs in an advance() on this thread (see "When a task runs").

  // Reads the clock once and runs, on this thread, every task due at that
  // reading, in deadline order (ties in the order they were scheduled);
  // returns how many ran (a task that threw counts: it ran). A timeout that
  // a task schedules while advance() runs is filed but runs in a later
  // advance(), never in this one, even when it is due already. Two
  // exceptions to the order: a reset() by a task acts as the walk goes on,
  // so a timeout it moves to a deadline that has passed may still run in
  // this advance(), out of order; and a timeout reset() to a later deadline
  // stays filed by the old one until the walk reaches it, so when its new
  // deadline has come too (in the same tick) it runs there, before those
  // due between its old and new deadlines. A kBurst periodic timeout runs
  // each of its missed runs in this advance(). A sleep (timer/coro.h) whose
  // stop was requested on this thread runs after what is due, without
  // waiting for its tick's end.
  // Timeouts cancelled from other threads are unlinked first. Owner thread
  // only; 0 from a task (the running advance() goes on), and 0 after
  // stop().
  // Cost: O(1) per task run and per cancelled timeout unlinked, plus the
  // moves of far timeouts down a level of the wheel (a few in a timeout's
  // life); one clock read.
  int64_t advance();

  // The earliest moment at which advance() has work, on this timer's clock
  // (now()): the run time of the earliest pending timeout (see "When a task
  // runs"; with a slack below the tick, its deadline plus the slack), or
  // earlier, when timeouts due beyond one turn of the wheel
  // (tick_duration * ticks_per_wheel) must move down a level (at most once
  // per level for each, see "When a task runs"), or when a timeout's
  // deadline was reset() later (advance() then runs nothing and files it
  // again); now() when a sleep's stop was requested on this thread
  // (timer/coro.h). Never later than the run time of a pending timeout.
  // nullopt: nothing pending (or stopped). Takes in the cancellations of
  // other threads first, so that a cancelled timeout no longer counts.
  // From a task during advance(), now(). Owner thread only.
  // Cost: O(levels + ticks_per_wheel / 64) bit scans at most; with a slack
  // below the tick, a sort of the next bucket when it changed.
  std::optional<TimePoint> nextWakeup() const;

  // nextWakeup() as a poll/epoll_wait timeout: the milliseconds from now()
  // until it, rounded up (a wait that ends early would find nothing due);
  // 0 when it has come; -1 (wait without a timeout) when nothing is
  // pending. At most INT_MAX. Owner thread only; cost of nextWakeup() plus
  // a clock read.
  int pollTimeoutMs() const;

  // Cancels every pending timeout, one-shot and periodic, those a running
  // task scheduled included, and keeps the timer running; returns how
  // many. Their tasks are destroyed before it returns, but for a periodic
  // run in progress (cancelAll() from that task), whose task goes when the
  // run returns. 0 after stop(), a stop() from a task included, and then it
  // touches nothing: what is pending is stop()'s to return. Owner thread
  // only (a task may call it).
  // Cost: O(pending).
  int64_t cancelAll();

  // Stops the timer and returns every timeout that was neither run nor
  // cancelled, earliest deadline first (ties in the order found), each now
  // marked cancelled (isCancelled()) with its task still inside
  // (Timeout::takeTask()). Afterwards pendingTimeouts() == 0, scheduling
  // fails with FailedPrecondition, advance() runs nothing and nextWakeup()
  // is nullopt. A second call returns an empty vector. Owner thread only.
  // From a task during advance(): the timer stops (scheduling fails,
  // nothing more runs) and that advance() ends after the task, but the
  // call returns an empty vector, since the wheel is being walked. As that
  // advance() returns, what was pending is stopped (pendingTimeouts() 0,
  // each handle isCancelled(), a cancel() false, a coroutine sleep ended);
  // the next stop() returns it (the destructor destroys it otherwise).
  // Cost: O(pending log pending); waits for cancel() calls in progress on
  // other threads.
  std::vector<Timeout> stop();

  // Timeouts scheduled and neither run nor cancelled (nor returned by
  // stop()); a periodic timeout counts once until it ends. A successful
  // cancel() from any thread is reflected when it returns. Any thread.
  // Cost: a few relaxed atomic loads.
  int64_t pendingTimeouts() const;

  // The timer's clock, now: std::chrono::steady_clock by default; with
  // LocalTimerOptions::clock, time_since_epoch() is that clock's
  // NowNanos(). The scale of newTimeoutAt(), nextWakeup(),
  // Timeout::deadline() and Timeout::resetAt(). Any thread.
  TimePoint now() const;

  // A snapshot of this timer's counters and lateness histogram
  // (timer/metrics.h); `wakeups` counts advance() calls. Any thread: exact
  // between advance() calls; while one runs, `expired` and the histogram
  // may trail its runs by up to 64. Cost: copies the histogram (4 KiB).
  TimerMetrics metrics() const;

  // True on the owner thread (LocalTimerOptions::owner, or the thread that
  // made the first owner-only call); false elsewhere, and before any
  // thread is the owner. Binds nothing. Any thread; cost: one relaxed load
  // and a compare.
  bool isOwnerThread() const;
  // The owner thread; std::thread::id() while none is bound. Any thread.
  std::thread::id ownerThread() const;

  // The effective configuration: tick_duration and ticks_per_wheel after
  // rounding up to a power of two; the slack, or one tick.
  absl::Duration tickDuration() const { return tick_duration_; }
  int ticksPerWheel() const { return ticks_per_wheel_; }
  absl::Duration slack() const { return slack_; }

 private:
  // Expedites the sleeps of timer/coro.h (ExpediteSleep()).
  friend class internal::LibraryTimeouts;

  LocalTimer(std::unique_ptr<internal::LocalEngine> engine, absl::Duration tick,
             int ticks_per_wheel, absl::Duration slack, std::thread::id owner);

  // True on the owner thread, binding it when none is: the check of every
  // owner-only call (see "Threading").
  bool OnOwnerThread() const;
  // The owner-only calls that return no status: aborts off the owner thread.
  void CheckOwner(const char* call) const;

  // A sleep whose stop was requested on the owner thread, reset to now:
  // runs in the next advance() without waiting for its tick's end, and the
  // plan is now until then (LocalEngine::Expedite()).
  void ExpediteSleep(const Timeout& timeout);
  // A callable that is not empty, to the engine (LocalEngine::Schedule):
  // what every scheduling call ends in.
  friend class SchedulingCalls<LocalTimer>;
  absl::StatusOr<Timeout> Schedule(internal::TaskEmplacer emplace,
                                   void* callable,
                                   const internal::DeadlineSpec& when);

  // Owner-only calls change the engine even where they are const (a
  // nextWakeup() takes cross-thread cancellations in): the pointer is not
  // const-qualified through a const LocalTimer.
  const std::unique_ptr<internal::LocalEngine> engine_;
  const absl::Duration tick_duration_;
  const int ticks_per_wheel_;
  const absl::Duration slack_;
  // The owner thread, or std::thread::id() until the first owner-only call
  // binds it. Written once (the binding CAS); relaxed everywhere, since the
  // id is the only datum it guards: a thread that reads another's id
  // touches nothing else, and the owner's own calls are ordered by its
  // program order.
  mutable std::atomic<std::thread::id> owner_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_LOCAL_TIMER_H_
