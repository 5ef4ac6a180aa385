// timer/idle_tracker.h
// -----------------------------------------------------------------------------
// tickwheel::IdleTracker: closes what has been silent for too long (idle
// connections, stale sessions) on a hashed wheel, while activity on busy
// objects costs one relaxed atomic store and no timer operation at all.
//
// Example: an epoll server
//
//   auto tracker = tickwheel::IdleTracker::Create({
//       .default_idle_timeout = absl::Seconds(60),
//       .tick_duration = absl::Milliseconds(100)}).value();
//   tracker->Activate().IgnoreError();                // per listener
//   ...on accept:
//   conn->idle = tracker->Register([conn] { ::shutdown(conn->fd, SHUT_RDWR); })
//                    .value();
//   ...on every read:
//   conn->idle.touch();
//   ...on close (EOF, error, or after the shutdown above):
//   conn->idle.unregister();   // on_idle is over or will never run
//   ::close(conn->fd);
//   ...when the listener stops:
//   tracker->Deactivate().IgnoreError();
//
// Or on a Timer the application already has, with no thread of its own:
//
//   std::shared_ptr<tickwheel::Timer> timer = ...;
//   auto tracker = tickwheel::IdleTracker::Create({.timer = timer}).value();
//
// The lazy design
//   Each registration puts one timeout on the wheel, idle_timeout after the
//   registration. touch() only overwrites the object's activity stamp. When
//   the timeout comes up, a check on the timer's worker compares the stamp
//   with the clock: idle for idle_timeout or longer, on_idle runs; otherwise
//   the entry goes back on the wheel for exactly the remaining time. A busy
//   object thus costs about one timer operation per idle_timeout instead of
//   a cancel and a newTimeout per packet (the naive design).
//
// Accuracy and the "no clock read" touch()
//   touch() stamps the tracker's coarse clock, a shared atomic that the
//   worker refreshes every refresh_period (a task on the same wheel, so it
//   keeps working when the worker no longer wakes every tick) and at every
//   check, while the tracker is active and something is registered. It
//   holds a ceiling, (clock reading) + refresh_period, which stays at or
//   above the true time until the next refresh is due. Hence:
//   - on_idle never runs before (recorded stamp + idle_timeout): the check
//     that decides to fire reads the clock and requires
//     now - stamp >= idle_timeout, and the Timer never runs a check early;
//   - the recorded stamp is never earlier than the real last activity while
//     the worker is on time, so on_idle never runs before (real last
//     activity + idle_timeout). A worker that falls L behind (a slow on_idle
//     inline, a suspended process) can make it up to L early for touches
//     made during that delay;
//   - it runs at most about refresh_period + one tick after (real last
//     activity + idle_timeout) when the worker is on time: the stamp may be
//     up to one refresh period ahead, and the check lands on the first tick
//     boundary at or after (stamp + idle_timeout). metrics() reports the
//     observed maxima: worst_lateness (relative to the stamp) and
//     worst_clock_lag (the L above).
//   With nothing registered the refresh pauses, so an idle tracker costs its
//   timer nothing, and the ceiling goes stale. No registration sees that: a
//   registration's stamp starts as an exact clock reading (Register(),
//   reregister(), and Activate(), which takes the later of the stamp and the
//   clock), and the registration that ends the pause publishes a fresh
//   ceiling and restarts the refresh before Register() or reregister()
//   returns. While the tracker is inactive nothing refreshes either, for the
//   same reason.
//   Several threads touching the same object race benignly: one stamp wins,
//   each is a valid ceiling at the time it was read.
//
// Threading
//   IdleTracker is thread-safe. IdleHandle::touch(), unregister(),
//   reregister() and the queries may be called from any thread, concurrently
//   with each other and with the worker; moving, assigning and destroying a
//   handle must not race with other uses of the same handle object (as for
//   any object). on_idle runs on the tracker's timer worker thread, or on
//   task_executor when set; it may call any method of the tracker and of any
//   handle, including its own handle (unregister() then does not wait), and
//   must not block for long (every later check waits for it when it runs
//   inline on the worker).
//
// Lifetime
//   Handles may outlive the tracker: destroying the tracker detaches every
//   registration (on_idle destroyed, never run), stops its own timer (or
//   cancels its timeouts on the application's), releases what the
//   application gave it (the Timer, the clock, the task executor), and
//   leaves the handles inert (touch() harmless, unregister() false,
//   reregister() FailedPrecondition). Inert handles keep none of the
//   application's objects alive.

#ifndef TICKWHEEL_TIMER_IDLE_TRACKER_H_
#define TICKWHEEL_TIMER_IDLE_TRACKER_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/idle_tracker_metrics.h"
#include "tickwheel/timer/internal/idle_stamp.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {

namespace internal {
class IdleCore;
class IdleEntry;
class IdleEntryTestPeer;
}  // namespace internal

struct IdleTrackerOptions {
  // Idle time after which on_idle runs, for Register() calls that do not
  // give one. Must be > 0; InfiniteDuration (or anything beyond ~292 years)
  // means never.
  absl::Duration default_idle_timeout = absl::Seconds(60);
  // The wheel underneath (see TimerOptions): on_idle runs on a tick
  // boundary, so this is the firing granularity.
  absl::Duration tick_duration = absl::Milliseconds(100);
  int ticks_per_wheel = 512;
  // How often the coarse clock that touch() reads is refreshed; the accuracy
  // of recorded activity. Zero means tick_duration; values below
  // tick_duration are raised to it. Larger values mean fewer worker wakeups
  // and later firing (by up to this much).
  absl::Duration refresh_period = absl::ZeroDuration();
  // How long the last Deactivate() (and the destructor) waits for the timer
  // to stop and for on_idle calls in progress. Negative counts as zero.
  absl::Duration drain_timeout = absl::Seconds(5);
  // The worker thread's name.
  std::string thread_name = "tickwheel-idle";
  // When set, on_idle calls are handed to it (it is called on the worker
  // and should only enqueue) instead of running on the worker. The checks
  // themselves always run on the worker. If it drops a closure without
  // running it, that on_idle is destroyed unrun.
  std::function<void(absl::AnyInvocable<void()>)> task_executor;
  // The time source; empty means RealClock. Tests pass a ManualClock.
  std::shared_ptr<Clock> clock;
  // Runs the tracker on a Timer the application already has instead of
  // starting a timer (and a thread) of its own. The tracker shares ownership
  // of it until it is destroyed; tick_duration, ticks_per_wheel and
  // thread_name are then the timer's and ignored here, and its clock is the
  // timer's (setting `clock` too is InvalidArgument). Activate() arms the
  // registrations on it and Deactivate() cancels them; the Timer keeps
  // running. Checks and on_idle run on that Timer's worker (or its
  // task_executor), next to the application's own tasks, so on_idle must
  // not block. The tracker's timeouts are its own: the application's
  // cancelAll() passes them by (the tracker goes on), they count in
  // pendingTimeouts(), and the application's stop() destroys them unrun
  // instead of returning them. With nothing registered the tracker has no
  // timeout on the Timer. After the application's stop() nothing can fire
  // any more: registrations stay registered (unregister() and the
  // destructor work as usual), on_idle never runs, and Activate() after a
  // Deactivate() fails with FailedPrecondition when it has registrations to
  // arm.
  std::shared_ptr<Timer> timer;
};

// One tracked object. Returned by IdleTracker::Register(); move-only. A
// default-constructed (or moved-from) handle is empty: touch() does nothing,
// unregister() returns false, reregister() fails.
class IdleHandle {
 public:
  IdleHandle() = default;
  IdleHandle(IdleHandle&& other) noexcept;
  // Unregisters the registration this handle held (as unregister()), then
  // takes `other`'s.
  IdleHandle& operator=(IdleHandle&& other) noexcept;
  IdleHandle(const IdleHandle&) = delete;
  IdleHandle& operator=(const IdleHandle&) = delete;
  // unregister(), then releases the handle's share of the state.
  ~IdleHandle();

  // Records activity now. One relaxed atomic load of the tracker's coarse
  // clock and one relaxed atomic store into this object's stamp: no lock, no
  // allocation, no clock read, no queue traffic. Safe from any thread, at
  // any time, on any handle (after unregister() or the tracker's
  // destruction it records into a stamp nobody reads).
  void touch() const noexcept {
    if (entry_ != nullptr) {
      entry_->stamp.store(now_->load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    }
  }

  // Stops tracking at once: cancels the wheel timeout (the Timer frees it at
  // its next tick) and destroys on_idle, with its captures, before
  // returning, on the calling thread. A concurrent fire is resolved by the
  // registration's own lock: either on_idle has started, and then
  // unregister() waits until it has returned and its captures are destroyed
  // (unless called from inside that very on_idle), or it never runs. So
  // once unregister() returns, this registration's on_idle is not running
  // and will never run. Do not call it while holding a lock that on_idle
  // takes.
  // Returns true iff this call ended a registration before its on_idle
  // started; false for an empty handle, a registration that already fired
  // or was unregistered, and after the tracker was destroyed.
  // Cost: one atomic read-modify-write to reach the tracker (a weak
  // reference), the tracker's mutex and the entry's lock; one cancel().
  bool unregister();

  // Starts a new registration for the same object: on_idle and the idle
  // timeout are replaced (the previous on_idle is destroyed unrun if it has
  // not started), activity is stamped now, and the entry is armed afresh.
  // Works on a registration in any state (armed, fired, unregistered). The
  // version stamp makes every older wheel entry of this object stale: it is
  // dropped when it comes up (counted in stale_dropped), and an on_idle of
  // the previous registration that is running meanwhile is not affected.
  // InvalidArgument: empty on_idle or idle_timeout <= 0.
  // FailedPrecondition: empty handle, or the tracker was destroyed.
  // Cost: as Register(), without the entry's allocation.
  absl::Status reregister(absl::AnyInvocable<void()> on_idle);
  absl::Status reregister(absl::AnyInvocable<void()> on_idle,
                          absl::Duration idle_timeout);

  // True while the registration may still fire: registered, neither fired
  // nor unregistered (dormant ones too).
  bool isRegistered() const;
  // True once idleness was detected for the current registration: on_idle
  // has run, is running, or is queued on the task executor.
  bool hasFired() const;
  // The registration's idle timeout; zero for an empty handle.
  absl::Duration idleTimeout() const;

  explicit operator bool() const { return entry_ != nullptr; }

 private:
  friend class IdleTracker;
  friend class internal::IdleEntryTestPeer;
  IdleHandle(internal::IdleEntry* entry, const std::atomic<int64_t>* now,
             std::weak_ptr<internal::IdleCore> core);
  void Release();

  // The entry, of which the handle holds one reference; through it, the
  // tracker's context, where the coarse clock lives.
  internal::IdleEntry* entry() const;

  // The registration (an internal::IdleEntry, which derives from IdleStamp
  // so that touch() needs no more of it than its stamp).
  internal::IdleStamp* entry_ = nullptr;
  const std::atomic<int64_t>* now_ = nullptr;  // the tracker's coarse clock
  // The registry, for unregister() and reregister(); expires with the
  // tracker, so that an inert handle keeps none of it.
  std::weak_ptr<internal::IdleCore> core_;
};

// This class is thread-safe.
class IdleTracker {
 public:
  // InvalidArgument: default_idle_timeout <= 0, tick_duration <= 0 (or below
  // 1 ns), ticks_per_wheel outside [1, 2^30], both `timer` and `clock` set.
  // Starts no thread.
  static absl::StatusOr<std::unique_ptr<IdleTracker>> Create(
      IdleTrackerOptions options = {});

  // Detaches every registration (each on_idle destroyed, never run), stops
  // the timer, waiting at most drain_timeout for on_idle calls in progress
  // (none when destroyed from inside one of them), and logs if that is not
  // enough. Handles stay valid and inert.
  ~IdleTracker();

  IdleTracker(const IdleTracker&) = delete;
  IdleTracker& operator=(const IdleTracker&) = delete;

  // Starts tracking an object: on_idle runs once the object has had no
  // activity (touch()) for idle_timeout (default_idle_timeout if not given),
  // at most once per registration. The registration is armed at once when
  // the tracker is active, and dormant until the next Activate() otherwise.
  // InvalidArgument: empty on_idle, idle_timeout <= 0.
  // Cost: the tracker's mutex, two allocations (entry, timer node), one
  // clock read, one newTimeout() (two when it ends a pause of the refresh:
  // the first registration of an active tracker that had none).
  absl::StatusOr<IdleHandle> Register(absl::AnyInvocable<void()> on_idle);
  absl::StatusOr<IdleHandle> Register(absl::AnyInvocable<void()> on_idle,
                                      absl::Duration idle_timeout);

  // Reference-counted activation, for several listeners sharing a tracker.
  // The first Activate() creates and starts the timer (or, with
  // IdleTrackerOptions::timer, uses the application's) and arms every
  // registered object, counting its idle time from max(its stamp, now):
  // time spent inactive never counts as idle. Later calls only count.
  // Errors from Timer::Create (the instance limit); FailedPrecondition
  // while the tracker is being destroyed, or when the application's timer
  // has been stopped and there are registrations to arm. With nothing
  // registered it schedules nothing; the first Register() then does.
  absl::Status Activate();

  // Undoes one Activate(). The last one stops the timer (with
  // IdleTrackerOptions::timer: cancels this tracker's timeouts on it and
  // leaves it running) and waits at most drain_timeout for a check or an
  // on_idle still running (on the worker or on the executor). Tracked objects
  // then stay registered but dormant: on_idle never runs for them while
  // inactive, touch() and unregister() keep working, and the next Activate()
  // re-arms them as above. on_idle calls already handed to task_executor before
  // the stop still run when the executor gets to them. FailedPrecondition: more
  // Deactivate() than Activate() calls. DeadlineExceeded: something was still
  // running after drain_timeout; the
  //   stop completes in the background (a later Activate() starts a new
  //   timer meanwhile, and the old one's checks find themselves stale).
  // From inside on_idle: returns OK without waiting; the stop completes
  // after the callback returns.
  absl::Status Deactivate();

  bool isActive() const;
  absl::Duration defaultIdleTimeout() const;

  // Snapshots of this tracker's counters and of its timer's (the current
  // activation's, or the last one's while inactive).
  IdleTrackerMetrics metrics() const;
  TimerMetrics timerMetrics() const;

 private:
  explicit IdleTracker(std::shared_ptr<internal::IdleCore> core);
  std::shared_ptr<internal::IdleCore> core_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_IDLE_TRACKER_H_
