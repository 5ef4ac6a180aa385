// durable/mutex.h
// -----------------------------------------------------------------------------
// Internal. Mutex: a std::mutex that clang's -Wthread-safety can see, and
// MutexLock, its scoped guard, for durable/'s own state.
//
// durable/ is a client of tickwheel's public API and includes nothing from
// worker/, so it does not use the engine's annotated mutex; this is the same
// small idea. Why not absl::Mutex: Debian's libabsl is not built with
// ThreadSanitizer, which would then miss its happens-before edges. A
// std::mutex is a pthread mutex that TSan intercepts. gcc ignores the
// annotations; tools/thread_safety_check.sh checks them with clang.
//
// Waiting: std::condition_variable_any with the Mutex itself, while a
// MutexLock holds it; say in the predicate that the lock is held.
//
// This class is thread-safe.

#ifndef TICKWHEEL_DURABLE_MUTEX_H_
#define TICKWHEEL_DURABLE_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tickwheel::durable::internal {

class ABSL_LOCKABLE Mutex {
 public:
  constexpr Mutex() noexcept = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

  // BasicLockable, for std::condition_variable_any.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_MUTEX_H_
