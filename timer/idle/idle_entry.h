// timer/idle/idle_entry.h
// -----------------------------------------------------------------------------
// Internal. IdleEntry: the state of one tracked object (one IdleHandle), shared
// between the handle, the wheel timeouts that check it, and the tracker's
// registry. Users include timer/idle_tracker.h.
//
// An entry knows the tracker only through its IdleContext
// (timer/idle/idle_context.h): the counters, the coarse clock, the task
// executor and the callback accounting. It does not know the registry that
// holds it (IdleCore's IntrusiveList, whose links it carries but never
// touches) nor the Timer's life cycle: whoever arms it passes the Timer in.
//
// Ground rules
// ------------
// Fields and who may touch them:
//
//   stamp        any thread, lock-free: touch() stores, checks load (relaxed).
//   refs         any thread: one per IdleHandle, one per timer task or queued
//                on_idle closure that names the entry. The last Unref deletes.
//   lock_        a tiny spinlock guarding every field marked (L). It is held
//                only for a few loads/stores, one newTimeout() or one cancel(),
//                never while user code runs and never while waiting.
//   state_ (L)   written under lock_; also loaded without it (acquire) by the
//                read-only queries isRegistered()/hasFired().
//   running_     true while on_idle runs (set under lock_, cleared without it,
//                then notified); unregister() waits on it.
//   version_ (L) bumped by every transition that makes the wheel entry in
//                flight obsolete: a re-arm, a fire, unregister, re-register,
//                Activate's re-arm, a disarm, detach. A timer task carries
//                the version it was armed with; when it comes up with another
//                one it is stale and is dropped (counted in stale_dropped)
//                without a look at anything else.
//   armed_ (L)   the one wheel timeout carrying the current version while
//                kArmed; cancelled on unregister/re-register so that the Timer
//                frees its node at its next tick.
//   registry links  the registry's (IntrusiveListNode), guarded by the
//                registry's owner (IdleCore::mu_); the entry never reads them.
//
// Lock order: the registry's lock (IdleCore::mu_), then an entry's lock_. The
// timer worker takes only lock_ (one entry at a time); user code (on_idle) runs
// with no lock held.
//
// States (L):
//
//   kDormant --Activate--------------> kArmed     (tracker inactive -> active)
//   kArmed   --check, active recently-> kArmed     (re-armed: version+1)
//   kArmed   --check, idle, inline----> kRunning   (on_idle moved out, runs)
//   kArmed   --check, idle, executor--> kQueued    (closure handed to executor)
//   kQueued  --executor runs closure--> kRunning
//   kQueued  --closure dropped--------> kFired     (on_idle destroyed unrun)
//   kRunning --on_idle returns--------> kFired
//   kArmed   --newTimeout fails-------> kDormant   (the timer is stopping)
//   kArmed   --Deactivate, shared timer-> kDormant (check cancelled)
//   kDormant/kArmed/kQueued --unregister()--> kUnregistered (on_idle destroyed)
//   kRunning --unregister()-----------> waits for on_idle, then kUnregistered
//   any but kDetached --re-register---> kArmed or kDormant (new version)
//   any --tracker destroyed-----------> kDetached (on_idle destroyed)
//
// Every transition out of kArmed/kQueued happens under lock_, so exactly one
// of {check fires, unregister, re-register, detach} wins a registration, and
// on_idle runs at most once per registration.
//
// Memory ordering: lock_ is acquire/release, so everything written under it
// is seen by the next holder. `stamp` carries no other data (relaxed). A check
// that races a touch() may read the previous stamp: the touch then counts as
// happening after the check, which is the inherent race of any idle timer.
// `running_` is stored with release after on_idle returned and its captures
// were destroyed, and loaded with acquire by the waiting unregister(), so the
// waiter sees everything on_idle did.

#ifndef TICKWHEEL_TIMER_IDLE_ENTRY_H_
#define TICKWHEEL_TIMER_IDLE_ENTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "tickwheel/timer/idle/idle_context.h"
#include "tickwheel/timer/idle/intrusive_list.h"
#include "tickwheel/timer/idle/spin_lock.h"
#include "tickwheel/timer/internal/idle_stamp.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {

enum class IdleState : uint8_t {
  kDormant,       // registered; no wheel timeout (tracker inactive)
  kArmed,         // registered; armed_ is on the wheel with version_
  kQueued,        // idle; on_idle handed to the task executor, not started
  kRunning,       // idle; on_idle running
  kFired,         // on_idle returned (or was dropped by the executor)
  kUnregistered,  // unregister() ended the registration
  kDetached,      // the tracker was destroyed
};

// The registry's links are the IntrusiveListNode base, which only the
// registry (IdleCore) reads and writes. The activity stamp is the IdleStamp
// base (timer/internal/idle_stamp.h): the coarse clock's ceiling at the last
// touch(), which IdleHandle stores inline, or the exact clock reading at
// (re-)registration/activation.
class IdleEntry : public IntrusiveListNode, public IdleStamp {
 public:
  // A counted reference, small enough (8 bytes) that a timer task capturing
  // it and a version fits absl::AnyInvocable's inline storage: arming an
  // entry allocates the timer node and nothing else.
  class Ref {
   public:
    Ref() = default;
    explicit Ref(IdleEntry* e) : e_(e) {
      if (e_ != nullptr) e_->refs_.fetch_add(1, std::memory_order_relaxed);
    }
    Ref(Ref&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    Ref& operator=(Ref&& o) noexcept {
      if (this != &o) {
        Reset();
        e_ = std::exchange(o.e_, nullptr);
      }
      return *this;
    }
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Reset(); }
    void Reset() {
      if (e_ != nullptr) std::exchange(e_, nullptr)->Unref();
    }
    IdleEntry* get() const { return e_; }
    IdleEntry* operator->() const { return e_; }

   private:
    IdleEntry* e_ = nullptr;
  };

  // refs == 1 (the handle's). Not yet registered: kDormant, version 0, no
  // on_idle.
  IdleEntry(std::shared_ptr<IdleContext> context, int64_t timeout_nanos);
  IdleEntry(const IdleEntry&) = delete;
  IdleEntry& operator=(const IdleEntry&) = delete;

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // The tracker's context; alive as long as the entry.
  const IdleContext& context() const { return *context_; }

  // ---- Called by the registry's owner with its lock held, which keeps ----
  // ---- `timer` alive.                                                 ----

  // Starts a registration: replaces on_idle and the timeout if given (the old
  // on_idle is returned so that the caller destroys it with no lock held),
  // stamps `now`, bumps the version, cancels a timeout still armed for the
  // previous registration, and arms one for `timeout_nanos` on `timer`
  // (nullptr: tracker inactive, the entry stays kDormant). Returns whether
  // the entry was already counted as tracked before the call in
  // `was_tracked`. Fails only with kDetached (the caller checks first).
  absl::AnyInvocable<void()> StartRegistration(
      absl::AnyInvocable<void()> on_idle, int64_t timeout_nanos, Timer* timer,
      int64_t now, bool* was_tracked);

  // Activate(): a kDormant or kArmed entry is re-armed on `timer`, counting
  // its idle time from max(stamp, now) (time spent inactive is never idle
  // time). Other states are left alone.
  void Rearm(Timer* timer, int64_t now);

  // The last Deactivate() on an application's Timer, which keeps running: a
  // kArmed entry's check is cancelled and the entry goes kDormant (new
  // version, so a check already running finds itself stale). Other states
  // are left alone.
  void Disarm();

  // The tracker is being destroyed: ends any registration. Returns on_idle
  // (to be destroyed by the caller with no lock held) and whether the entry
  // was tracked.
  absl::AnyInvocable<void()> Detach(bool* was_tracked);

  // What unregister() leaves to do once the registry's lock is released:
  // cancel the armed timeout, destroy on_idle, and wait for an on_idle that
  // is running on another thread.
  struct Ended {
    bool before_fire = false;  // the registration ended before on_idle ran
    Timeout armed;
    absl::AnyInvocable<void()> on_idle;
    bool wait = false;
  };
  // IdleHandle::unregister(), the part under the registry's lock (IdleCore::
  // Unregister takes it and removes the entry from the registry). On an entry
  // whose tracker is gone (kDetached, out of every registry) it needs no
  // other lock: it changes nothing, and only reports whether to wait for an
  // on_idle still running.
  Ended EndRegistration();
  // The rest, with no lock held: cancels, destroys on_idle on this thread,
  // waits if need be.
  void FinishUnregister(Ended ended);

  // The queries behind IdleHandle (acquire loads, no lock).
  IdleState state() const { return state_.load(std::memory_order_acquire); }
  int64_t timeout_nanos() const;

  // ---- Called by timer tasks and executor closures. ----

  // The wheel check: the timer task armed with `version` came up on the
  // worker of `timer` (its Timeout::timer(): null only once that Timer's
  // destruction has begun). Reads the time from `timer`, never from the
  // tracker's clock, so that the tracker may release its clock at any time.
  void OnTimeout(uint64_t version, Timer* timer);

 private:
  friend class IdleEntryTestPeer;
  class QueuedFire;

  ~IdleEntry() = default;

  // Arms a library timeout (timer/internal/library_timeouts.h) `delay_nanos`
  // from now with a fresh version. Returns false (and leaves the entry
  // kDormant) if the timer refuses or is null.
  bool ArmLocked(Timer* timer, int64_t delay_nanos)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  // Moves armed_ out for the caller to cancel with no lock held.
  Timeout TakeArmedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    return std::exchange(armed_, Timeout());
  }
  void SetStateLocked(IdleState s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    state_.store(s, std::memory_order_release);
  }
  // Runs `on_idle` on this thread (kRunning already set, running_ true), then
  // destroys it and moves to kFired unless the registration `fired_version`
  // was ended or replaced meanwhile.
  void RunOnIdle(absl::AnyInvocable<void()> on_idle, uint64_t fired_version);
  // Hands the fire of registration `fired_version` (kQueued already set) to
  // the task executor, holding a reference to the executor for the call.
  void QueueOnIdle(uint64_t fired_version);
  // The executor ran the closure for registration `version` (or dropped it
  // unrun when `run` is false).
  void OnQueuedFire(bool run, uint64_t version);
  // Cancels `t` (if any) and counts the timer operation.
  void CancelAndCount(const Timeout& t);

  std::atomic<uint32_t> refs_{1};
  mutable IdleSpinLock lock_;
  std::atomic<IdleState> state_{IdleState::kDormant};
  std::atomic<bool> running_{false};
  uint64_t version_ ABSL_GUARDED_BY(lock_) = 0;
  int64_t timeout_nanos_ ABSL_GUARDED_BY(lock_);
  Timeout armed_ ABSL_GUARDED_BY(lock_);
  absl::AnyInvocable<void()> on_idle_ ABSL_GUARDED_BY(lock_);
  const std::shared_ptr<IdleContext> context_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_ENTRY_H_
