// base/mutex.h
// -----------------------------------------------------------------------------
// Internal. Mutex: a std::mutex that clang's -Wthread-safety can see, and
// MutexLock, its scoped guard.
//
// Why: libstdc++ does not mark std::mutex as a capability, so ABSL_GUARDED_BY,
// ABSL_EXCLUSIVE_LOCKS_REQUIRED and friends naming a std::mutex are comments
// that no compiler checks. Naming a Mutex instead, they are checked by
// `clang -Wthread-safety` (tools/thread_safety_check.sh): reading a guarded
// field without the lock, or calling a *Locked helper without it, is a
// compile error there. gcc ignores the annotations; the code is the same.
//
// Why not absl::Mutex: Debian's libabsl is not built with ThreadSanitizer, so
// TSan would not see its happens-before edges and would report false races.
// Mutex keeps a std::mutex inside, a pthread mutex that TSan intercepts, and
// adds nothing at run time: every method is one inline call or nothing,
// except LockSpinning(), which tries a few times before it blocks.
//
// Waiting: use std::condition_variable_any and pass it the Mutex itself, while
// a MutexLock holds it. For clang the lock is held before and after the wait,
// which is what the caller sees; the predicate runs with it held, so say so:
//
//   MutexLock lock(&mu_);
//   cv_.wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
//     return ready_;
//   });
//
// lock()/unlock() also make Mutex BasicLockable for std::unique_lock, but
// clang does not know what std::unique_lock holds: prefer MutexLock.
//
// This class is thread-safe.

#ifndef TICKWHEEL_BASE_MUTEX_H_
#define TICKWHEEL_BASE_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tickwheel::internal {

class ABSL_LOCKABLE Mutex {
 public:
  // constexpr, like std::mutex: a global Mutex is constant-initialized, so it
  // is usable from other translation units' static initializers.
  constexpr Mutex() noexcept = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

  // Lock(), but first spins for a few microseconds while the mutex is held:
  // for a mutex whose holders keep it for about a microsecond, where
  // sleeping in the kernel and being woken costs ten times that. Backs off
  // exponentially (1, 2, 4, ... 64 pauses between tries, ~127 in all), so a
  // waiter whose holder was descheduled gives up quickly and sleeps.
  void LockSpinning()
      ABSL_EXCLUSIVE_LOCK_FUNCTION() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (int pauses = 1; pauses <= 64; pauses *= 2) {
      if (mu_.try_lock()) return;
      for (int i = 0; i < pauses; ++i) Pause();
    }
    mu_.lock();
  }

  // The BasicLockable spelling of Lock()/Unlock(), for the standard library.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::mutex mu_;
};

// Holds `*mu` from construction to the end of the scope; kSpinFirst takes
// it with Mutex::LockSpinning().
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  enum Mode { kBlock, kSpinFirst };

  explicit MutexLock(Mutex* mu, Mode mode = kBlock)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    if (mode == kSpinFirst) {
      mu_->LockSpinning();
    } else {
      mu_->Lock();
    }
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_MUTEX_H_
