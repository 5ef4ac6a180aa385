// timer/timer.h
// -----------------------------------------------------------------------------
// tickwheel: a hashed-wheel timer for C++ servers, in the manner of Netty's
// HashedWheelTimer. This is the one header to include: #include
// "tickwheel/timer/timer.h". It brings Timeout and TimerTask
// (timer/timeout.h, timer/task.h), TimerMetrics (timer/metrics.h), the log
// sink (timer/log.h), the instance limit (timer/instance_limit.h), the
// Clock interface (timer/clock.h) and the missed-run policy of periodic
// timeouts (MissedRuns, base/missed_runs.h).
//
// What it is for: very many timeouts that are mostly cancelled before they
// fire (request deadlines, retries, idle connections, lease renewals), with an
// accuracy of one tick. Scheduling and cancelling are O(1) and lock-free; one
// dedicated worker thread per Timer does all bookkeeping and runs the tasks.
// For deadlines that must be met to the microsecond, use a heap-based timer.
//
// Example:
//
//   auto timer = tickwheel::Timer::Create().value();   // 100 ms tick
//   absl::StatusOr<tickwheel::Timeout> t = timer->newTimeout(
//       [conn](const tickwheel::Timeout&) { conn->Close(); },
//       absl::Seconds(30));
//   if (!t.ok()) return t.status();    // stopped, or too many pending
//   ...
//   t->cancel();                       // the reply arrived in time
//   ...
//   std::vector<tickwheel::Timeout> left = timer->stop().value();
//
// How it works
//   newTimeout() takes a 64-byte cell from a thread-local cache of
//   tickwheel's node pool, reads the clock, and hands the node to the worker
//   through a lock-free ring of its thread's shard (one CAS; a multi-producer
//   queue when the ring is full). Threads are spread over shards, each with
//   its own counters and queues on cache lines of their own, so threads
//   scheduling at once do not contend. A cancel() that comes before the
//   worker has taken the node takes it back out of the ring, so the worker
//   never sees it. The worker thread starts on the first newTimeout() and
//   records startTime, from which it counts ticks; a deadline is a reading
//   of the timer's clock. The worker drains the notice queues (cancellations
//   and deadlines moved earlier), moves new nodes into the wheel, and runs
//   the tasks that are due, in slices of a few thousand nodes. The wheel is
//   Netty's power-of-two ring of ticks_per_wheel one-tick buckets (bucket =
//   due tick & mask, remainingRounds = full turns still to wait), with
//   coarser levels above it for far deadlines, so that far entries are never
//   walked and the worker sleeps until the next tick with work instead of
//   waking every tick. Buckets are arrays walked with prefetching, so a mass
//   expiry runs at memory speed. A task runs at the first tick boundary at or
//   after its deadline, never before: normally less than one tick late (with
//   TimerOptions::slack below the tick, within the slack instead). A
//   worker that falls behind (a slow task, a suspended process) catches up
//   every missed tick in order. docs/DESIGN.md has the whole story.
//
// Threading and memory ordering
//   Timer and Timeout are thread-safe: any thread may call newTimeout(),
//   cancel(), pendingTimeouts() and stop() at any time, concurrently. What a
//   thread did before newTimeout() returned happens-before the task runs.
//   Tasks run one at a time on the worker thread (or are handed to
//   TimerOptions::task_executor), so a slow task delays every later one: hand
//   long work elsewhere. A task may call newTimeout() and cancel() on its own
//   Timer, and may destroy it; stop() from a task fails (FailedPrecondition),
//   since the worker cannot wait for itself.
//
// Errors are absl::Status values; no exception crosses the API. A task that
// throws is logged (timer/log.h) and the worker goes on.
//
// Lifetime: destroying a Timer stops it. Do not destroy it while other
// threads may still call its methods (as with any object); Timeout handles may
// outlive it (see timer/timeout.h).

#ifndef TICKWHEEL_TIMER_TIMER_H_
#define TICKWHEEL_TIMER_TIMER_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/missed_runs.h"  // MissedRuns, for newPeriodic()
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/instance_limit.h"
#include "tickwheel/timer/internal/schedule.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/timer/log.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/scheduling.h"
#include "tickwheel/timer/task.h"
#include "tickwheel/timer/timeout.h"

// The version of tickwheel these headers belong to (CHANGELOG.md).
#define TICKWHEEL_VERSION_MAJOR 0
#define TICKWHEEL_VERSION_MINOR 2
#define TICKWHEEL_VERSION_PATCH 0
#define TICKWHEEL_VERSION "0.2.0"

namespace tickwheel {

namespace internal {
class Worker;
class LibraryTimeouts;
}  // namespace internal

struct TimerOptions {
  // The wheel's resolution: tasks run at tick boundaries. Must be > 0 (at
  // least 1 ns). Ticks below 1 ms are honoured, not clamped; each tick costs a
  // wake-up of the worker.
  absl::Duration tick_duration = absl::Milliseconds(100);
  // Buckets in the wheel. Must be > 0 and at most 2^30; rounded up to a power
  // of two. A wheel should span the usual delays: tick * ticks_per_wheel.
  // Costs 24 bytes per bucket, plus the arrays of the buckets in use.
  int ticks_per_wheel = 512;
  // Upper bound on pendingTimeouts(); <= 0 means unlimited. newTimeout()
  // returns ResourceExhausted instead of exceeding it.
  int64_t max_pending_timeouts = 0;
  // The worker thread's name (pthread name, cut to 15 characters).
  std::string thread_name = "tickwheel";
  // When set, each expired task is handed to it instead of running on the
  // worker thread. It is called on the worker thread and should only enqueue.
  // A closure it destroys without running it (or keeps from a throw)
  // destroys the task unrun, with its captures.
  std::function<void(absl::AnyInvocable<void()>)> task_executor;
  // tickwheel extension: the time source. Empty means the monotonic real
  // clock (RealClock::Shared()); tests pass a ManualClock
  // (timer/manual_clock.h).
  std::shared_ptr<Clock> clock;
  // How late past its deadline a task may run, unless the worker is busy:
  // no earlier than its deadline and no later than deadline + slack, plus
  // the operating system's wake-up latency. Empty (the default) or
  // anything at or above tick_duration means one tick: tasks run at the
  // first tick end at or after their deadline, and the worker wakes only at
  // tick ends. Below a tick, the worker wakes for the earliest deadline it
  // holds plus the slack and runs everything due by then, so deadlines
  // within the slack of each other share one wake-up; 0 runs each task as
  // close to its deadline as the OS allows, and the timeouts the worker has
  // filed run in deadline order within each tick. A timeout that is overdue
  // when the worker takes it in (a deadline in the past, or a worker that
  // was busy) runs as it is taken in: in the order its thread scheduled it,
  // not in deadline order. The tick and ticks_per_wheel still decide where
  // a timeout is filed (and so the cost of scheduling and cancelling, which
  // does not change with the slack); the slack decides only when the worker
  // wakes. With nothing due it still never wakes. On the real clock, a
  // slack below Linux's default timer slack (50 us) also becomes the worker
  // thread's kernel timer slack (prctl(PR_SET_TIMERSLACK); 1 ns for 0), so
  // that the kernel does not end the worker's sleeps later than the timer
  // allows; that costs the batching of wake-ups the kernel would otherwise
  // do. Must be >= 0.
  std::optional<absl::Duration> slack;
};

class Timer : public SchedulingCalls<Timer> {
 public:
  // Validates `options` and makes a timer. No thread starts until the first
  // timeout is scheduled.
  // InvalidArgument: tick_duration <= 0, below 1 ns or infinite;
  //   ticks_per_wheel <= 0 or > 2^30; tick_duration * (ticks_per_wheel
  //   rounded up) overflows int64 nanoseconds; slack < 0.
  // ResourceExhausted: more live timers than the instance limit when it is
  //   set to fail (timer/instance_limit.h), or no memory for the wheel.
  static absl::StatusOr<std::unique_ptr<Timer>> Create(
      TimerOptions options = {});

  // The checks of Create() on tick_duration and ticks_per_wheel, without
  // creating a timer (the same InvalidArgument errors).
  static absl::Status CheckOptions(const TimerOptions& options);

  // Stops the timer if needed: tasks not yet run are destroyed, never run;
  // joins the worker thread. When called from one of its own tasks, the
  // worker finishes the shutdown after that task returns.
  ~Timer();

  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // newTimeout(), newTimeoutAt() and newPeriodic(), in every duration and
  // time-point form: SchedulingCalls (timer/scheduling.h) documents each,
  // with its errors and its cost on a Timer. Any thread may call them.

  // Cancels every timeout pending at the call, one-shot and periodic, and
  // keeps the timer running; returns how many it cancelled. Their tasks
  // (with their captures) are destroyed before it returns, but for a
  // periodic run in progress, whose task goes when the run returns. Any
  // thread may call it, a task included. 0 once stop() has begun, and then
  // it touches nothing (a task that calls it while another thread's stop()
  // waits for that task included): what is pending is stop()'s to return.
  // Timeouts scheduled while it runs may or may not be cancelled.
  // Cost: O(pending). From a thread other than the worker it hands the work
  // to the worker and waits for it (behind a task that is running).
  int64_t cancelAll();

  // Stops the worker and returns every timeout that was neither run nor
  // cancelled, earliest deadline first, each now marked cancelled
  // (isCancelled() == true, as in Netty 4.1.111+) with its task still inside
  // (Timeout::takeTask()). A task that is running when stop() is called
  // finishes first. Afterwards pendingTimeouts() == 0 and scheduling fails.
  // A second call returns an empty vector; so does stop() on a timer that
  // never scheduled anything (it never started a thread).
  // FailedPrecondition: called from the worker thread (inside a task).
  // Cost: joins the worker; O(pending log pending).
  absl::StatusOr<std::vector<Timeout>> stop();

  // Timeouts scheduled and neither expired nor cancelled (nor returned by
  // stop()); a periodic timeout counts once until it ends. A successful
  // cancel() is reflected when it returns. Exact when no call is in flight;
  // while other threads schedule or cancel, a snapshot that may be off by
  // those calls (never below 0). Cost: a few relaxed atomic loads per
  // producer shard.
  int64_t pendingTimeouts() const;

  // A snapshot of this timer's counters and lateness histogram
  // (timer/metrics.h). Cost: copies the histogram (4 KiB).
  TimerMetrics metrics() const;

  // The timer's clock, now: std::chrono::steady_clock by default; with
  // TimerOptions::clock, time_since_epoch() is that clock's NowNanos(). The
  // scale of newTimeoutAt(), Timeout::deadline() and Timeout::resetAt().
  TimePoint now() const;

  // The effective configuration: tick_duration and ticks_per_wheel after
  // rounding up to a power of two.
  absl::Duration tickDuration() const { return tick_duration_; }
  int ticksPerWheel() const { return ticks_per_wheel_; }
  // The effective slack: TimerOptions::slack, or one tick.
  absl::Duration slack() const { return slack_; }

 private:
  Timer(absl::Duration tick, int ticks_per_wheel, absl::Duration slack);

  // A callable that is not empty, to the worker (Worker::Schedule): what
  // every scheduling call ends in.
  friend class SchedulingCalls<Timer>;
  absl::StatusOr<Timeout> Schedule(internal::TaskEmplacer emplace,
                                   void* callable,
                                   const internal::DeadlineSpec& when);

  std::shared_ptr<internal::Worker> worker_;
  absl::Duration tick_duration_;
  int ticks_per_wheel_;
  absl::Duration slack_;
  std::atomic<bool> counted_{true};  // holds an instance-limit slot
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_TIMER_H_
