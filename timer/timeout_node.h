// timer/timeout_node.h
// -----------------------------------------------------------------------------
// Internal. The heap object behind a Timeout handle, and the part of a timer's
// state that Timeout::cancel() needs. Users include timer/timer.h instead.
//
// Ground rules
// ------------
// A node is created by Timer::newTimeout() and lives while anyone holds a
// reference (`refs`): each Timeout handle holds one; the worker holds one from
// newTimeout() until it is done with the node (the "worker reference"); a
// cancel() holds one while the node sits in the cancellation queue.
//
// `state` is the only field that several threads race on. Transitions:
//
//     kPending --cancel()--------> kCancelled
//     kPending --worker expires--> kExpired
//     kPending --stop()----------> kStopped --takeTask()--> kStoppedTaken
//
// Each transition out of kPending is a compare-and-swap, so exactly one of
// cancel(), expiry and stop() wins: a cancel that races an expiry returns true
// only if it won, in which case the task never runs. The winner alone may touch
// `task` afterwards (cancel() destroys it, the worker runs it, stop() hands it
// to takeTask()).
//
// The shared state outlives every call that reaches it: newTimeout() and a
// winning cancel() both hold a pending slot in SharedTimerState::pending_word
// while they touch the queues (newTimeout() takes the slot before its push;
// cancel() pushes before it gives the slot back, with release), and stop()
// does not return before the pending count is zero (acquire). A cancel() or
// newTimeout() that comes after that finds the timer closed or the node no
// longer pending, and touches nothing shared.
//
// Fields below `state` are owned by the worker thread once the node has been
// pushed on the pending queue, except `task` (see above) and `cancel_next`
// (owned by the cancellation queue while the node is in it).
//
// Memory ordering: the producer writes every field before pushing; the pending
// queue's release/acquire pair publishes them to the worker. State transitions
// use acq_rel so that the winner sees the task as the producer left it.

#ifndef TICKWHEEL_TIMER_TIMEOUT_NODE_H_
#define TICKWHEEL_TIMER_TIMEOUT_NODE_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "worker/mpsc_queue.h"


namespace tickwheel {

class Timeout;
class Timer;
using TimerTask = absl::AnyInvocable<void(const Timeout&)>;

namespace internal {

enum class TimeoutState : uint8_t {
  kPending,       // scheduled; neither run nor cancelled
  kCancelled,     // cancelled by cancel()
  kExpired,       // the worker claimed it to run (it may be running now)
  kStopped,       // returned by stop(); the task is still inside
  kStoppedTaken,  // returned by stop(); takeTask() moved the task out
};

struct SharedTimerState;

struct TimeoutNode {
  // First: AnyInvocable is 16-byte aligned, so anything before it would be
  // padded to 16 bytes.
  TimerTask task;

  // References held: handles, the worker, the cancellation queue.
  std::atomic<uint32_t> refs{0};
  std::atomic<TimeoutState> state{TimeoutState::kPending};
  bool in_bucket = false;  // worker-only: linked into a wheel bucket
  uint8_t level = 0;       // worker-only: the wheel level it is linked at

  // Worker-only after publication.
  int64_t deadline = 0;  // nanoseconds after the worker's startTime
  // The tick at whose processing the node expires: Wheel::DueTick(deadline),
  // raised to the wheel's elapsed tick at insertion if that had passed.
  // With `level`, fixes the node's bucket (see wheel.h).
  int64_t due_tick = 0;

  // Pending-queue link; once the worker has popped the node, the bucket
  // list's forward link (see MpscQueue's ground rules).
  std::atomic<TimeoutNode*> next{nullptr};
  TimeoutNode* prev = nullptr;  // bucket list's backward link
  std::atomic<TimeoutNode*> cancel_next{nullptr};

  void Ref() { refs.fetch_add(1, std::memory_order_relaxed); }

  // Drops one reference; the last one deletes the node (and any task in it).
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

// A pending timeout costs one malloc chunk of sizeof(TimeoutNode) + 8 bytes,
// rounded up to 16: 96 bytes at 80. Keep it there (issue 3: at most 96 bytes
// per pending timeout, task storage included).
static_assert(sizeof(TimeoutNode) <= 80, "TimeoutNode grew past 80 bytes");

using CancelQueue = MpscQueue<TimeoutNode, &TimeoutNode::cancel_next>;
using PendingQueue = MpscQueue<TimeoutNode, &TimeoutNode::next>;

// What Timeout::cancel() needs of its timer. Owned by the timer's worker
// object; outlives every cancel() that can still reach it (see ground rules).
struct SharedTimerState {
  // pending_word = 2 * pending + closed. `pending` counts timeouts scheduled
  // and neither expired, cancelled nor stopped, plus newTimeout() calls that
  // have reserved a slot and not yet pushed; `closed` is set once by stop().
  // One word, so that one atomic RMW both reserves a slot and checks closed.
  static constexpr int64_t kClosed = 1;
  static constexpr int64_t kOne = 2;
  static int64_t Count(int64_t word) { return word >> 1; }

  // The public facade, for Timeout::timer(); null once the Timer is gone.
  std::atomic<Timer*> owner{nullptr};
  alignas(64) std::atomic<int64_t> pending_word{0};
  CancelQueue cancelled;
};

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_TIMEOUT_NODE_H_
