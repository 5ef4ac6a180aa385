// timer/idle/spin_lock.h
// -----------------------------------------------------------------------------
// Internal. IdleSpinLock: the one-byte lock of the idle tracker's small
// critical sections (each IdleEntry's state, the refresh chain, the task
// executor pointer), and IdleSpinLockGuard, its scoped holder.
//
// Why a spin lock: every critical section it guards is a handful of loads and
// stores plus at most one newTimeout() or cancel(), never user code and never
// a wait. A mutex (40 bytes, a futex on contention) would cost more per
// tracked object than it saves. Contention is rare (a check racing an
// unregister() of the same object), and a waiter yields its CPU while the
// lock stays taken.
//
// Memory ordering: lock() is an acquire exchange and unlock() a release
// store, so everything written under the lock is seen by the next holder.
// lock() is an interleaving point (base/interleave.h).
//
// Both classes carry Abseil's thread-safety attributes, so clang's
// -Wthread-safety checks the fields marked ABSL_GUARDED_BY one of these locks.
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_IDLE_SPIN_LOCK_H_
#define TICKWHEEL_TIMER_IDLE_SPIN_LOCK_H_

#include <atomic>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/interleave.h"

namespace tickwheel::internal {

// A test-and-test-and-set lock that yields while contended. Not recursive.
class ABSL_LOCKABLE IdleSpinLock {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    TICKWHEEL_INTERLEAVE_POINT();
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

// Holds `*lock` for the rest of the scope: std::lock_guard, in a form that
// -Wthread-safety understands (libstdc++'s lock_guard is not annotated).
class ABSL_SCOPED_LOCKABLE IdleSpinLockGuard {
 public:
  explicit IdleSpinLockGuard(IdleSpinLock* lock)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->lock();
  }
  ~IdleSpinLockGuard() ABSL_UNLOCK_FUNCTION() { lock_->unlock(); }

  IdleSpinLockGuard(const IdleSpinLockGuard&) = delete;
  IdleSpinLockGuard& operator=(const IdleSpinLockGuard&) = delete;

 private:
  IdleSpinLock* const lock_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_SPIN_LOCK_H_
