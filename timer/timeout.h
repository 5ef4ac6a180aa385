// timer/timeout.h
// -----------------------------------------------------------------------------
// tickwheel::Timeout, the handle to one scheduled task. Include timer/timer.h,
// which includes this file; the class lives apart only so that the worker can
// build handles without depending on the Timer facade.
//
// A Timeout is a reference-counted pointer (two words: the node, and the
// timer state that cancel() needs, kept here rather than in every node so
// that a pending timeout costs 8 bytes less): copying it costs one relaxed
// atomic increment, and every copy refers to the same scheduled task. A
// default-constructed Timeout is empty: its queries return false, timer()
// returns nullptr and takeTask() an empty task. Handles may outlive their
// Timer: isExpired(), isCancelled(), cancel() and takeTask() stay safe after
// the Timer is destroyed (cancel() then returns false). timer() is the one
// exception: inside a task it is always safe (nullptr once the Timer is being
// destroyed, even for a task that a task_executor runs after ~Timer), but on
// a handle kept elsewhere it must not be called after the Timer is destroyed.
//
// This class is thread-safe: any thread may call any method on any copy.

#ifndef TICKWHEEL_TIMER_TIMEOUT_H_
#define TICKWHEEL_TIMER_TIMEOUT_H_

#include <utility>

#include "absl/functional/any_invocable.h"
#include "timer/timeout_node.h"

namespace tickwheel {
namespace internal {
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
    if (node_ != nullptr) node_->Unref();
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

  // Cancels the task if it is still pending. Returns true iff this call moved
  // it from pending to cancelled: of any number of racing cancel() calls,
  // through one handle object or several copies, at most one returns true.
  // Then the task will never run; it has been destroyed (with its captures)
  // on the calling thread, and the timer's pendingTimeouts() has dropped by
  // one, before this returns. Do not call cancel() while holding a lock that
  // the task's captures take in their destructors.
  // Returns false if the task already expired, was cancelled, or was returned
  // by stop(), and for an empty handle.
  // The node itself is reclaimed by this thread when the worker has not
  // taken it yet, else by the worker, which unlinks it from its bucket in
  // O(1): within about a tick while timeouts are being scheduled or
  // cancelled, and at the latest when a few thousand cancelled timeouts
  // wait on the canceller's shard (worker/worker.h, "Bounded backlogs"). A
  // cancel() wakes the worker only at that bound.
  // Cost: lock-free; four atomic RMWs on cache lines this thread usually
  // owns. For a timeout the worker has not taken yet: a CAS that takes the
  // node back from its lane, an add that claims it, a CAS that gives the
  // lane cell back if no timeout was scheduled after it (else a store),
  // and an add that gives the pending slot back. For a timeout already in
  // the wheel: a CAS on the state, a push on a cancellation queue and two
  // adds.
  bool cancel() const;

  // For a timeout returned by Timer::stop(): moves the task out, so that the
  // caller can run it elsewhere or re-schedule it. Returns an empty TimerTask
  // in every other case, including a second call. Thread-safe: of two racing
  // calls, exactly one gets the task. Never throws, and never loses the
  // task: the task is handed over without moving the callable itself when
  // its move constructor may throw (such a callable was boxed on the heap
  // when it was scheduled, timer/task_slot.h).
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

  internal::TimeoutNode* node_ = nullptr;
  internal::SharedTimerState* shared_ = nullptr;
};

namespace internal {

// The worker's and the facade's access to handles and nodes.
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

#endif  // TICKWHEEL_TIMER_TIMEOUT_H_
