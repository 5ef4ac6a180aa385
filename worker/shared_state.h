// worker/shared_state.h
// -----------------------------------------------------------------------------
// Internal. The part of a timer's state that producers touch: per-shard
// pending counts, lanes and queues (SharedTimerState), which
// Timer::newTimeout() and Timeout::cancel() reach without the worker.

#ifndef TICKWHEEL_WORKER_SHARED_STATE_H_
#define TICKWHEEL_WORKER_SHARED_STATE_H_

#include <atomic>
#include <cstdint>

#include "tickwheel/base/clock.h"
#include "tickwheel/worker/lane.h"
#include "tickwheel/worker/mpsc_queue.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel::internal {

// Both queues link through TimeoutNode::next (see the ground rules).
using NodeQueue = MpscQueue<TimeoutNode, &TimeoutNode::next>;

// Wakes a sleeping worker (the worker implements it); called only while the
// caller keeps the timer's shared state alive (a pending slot, or kBusy on
// a pending node).
class BacklogWaker {
 public:
  // So that it drains its queues now rather than at its planned wake-up.
  virtual void WakeForBacklog() = 0;
  // If it sleeps past `deadline` (a clock reading), so that a timeout moved
  // earlier runs on time.
  virtual void WakeIfSleepingPast(int64_t deadline) = 0;

 protected:
  ~BacklogWaker() = default;
};

// A cancel() on the thread that drives the engine (a LocalTimer's owner,
// worker/local_engine.h) can settle the node itself: out of the wheel at
// once, with no notice queue and no RMW beyond the claim's CAS. The engine
// implements it; the facade's cancel() tries it first when the node carries
// the calling thread's tag (TimeoutNode::OwnedByThisThread()).
class OwnerCanceller {
 public:
  // TimeoutNode::OwnerClaim: kWon, the node is cancelled, unlinked, its
  // task destroyed and its slot given back; kLost, it was no longer
  // pending; kElsewhere, nothing done (a node the wheel does not hold as
  // plainly armed): use the protocol every thread uses.
  virtual TimeoutNode::OwnerClaim CancelOnOwner(TimeoutNode* node) = 0;

 protected:
  ~OwnerCanceller() = default;
};

// The producer side of a timer: what newTimeout() and Timeout::cancel() touch.
// Owned by the timer's worker object; outlives every cancel() that can still
// reach it (worker/timeout_node.h, ground rules).
//
// Sharding. Producers are spread over kShards shards by thread (a thread keeps
// its shard for life), each with its own pending count, pending queue and
// notice queue on cache lines of their own, so that two threads
// scheduling or cancelling at once do not fight over the same lines. The
// worker drains every shard. Order is kept per thread, not across threads
// (no call on one thread is ordered against a concurrent call on another).
//
// Counting. pending_word = 2 * count + closed. A newTimeout() reserves its
// slot in its shard's word; a winning cancel() gives one back by adding to
// the canceller's shard's `cancel_word` (2 * cancels, which the sum
// subtracts), so that the same RMW counts the cancel for metrics(); the
// worker gives slots back in `worker_word`. A single word can go negative;
// the sum over all words is the number of pending timeouts (plus
// reservations not yet pushed). With max_pending_timeouts set (`limited`),
// every reservation and release uses shards[0].pending_word instead, so
// that one CAS enforces the limit exactly, and a cancel() counts itself in
// its cancel_word with a second RMW, which the sum then ignores. stop() sets
// the closed bit in every word; a reservation checks its own word's bit in the
// same RMW. After stop() has set them all, each successful reservation's
// increment is visible to its reads, so a sum of zero means every reservation
// has been given back.
struct SharedTimerState {
  static constexpr int kShards = 8;  // a power of two
  static constexpr int64_t kClosed = 1;
  static constexpr int64_t kOne = 2;
  static int64_t Count(int64_t word) { return word >> 1; }  // also < 0

  // newTimeout() -> worker: the fast lane while it has room (a node in it
  // can be taken back by cancel(), see worker/worker.h), else the queue.
  static constexpr uint32_t kLaneCapacity = 16384;
  using NodeLane = Lane<TimeoutNode, kLaneCapacity>;

  struct alignas(64) Shard {
    std::atomic<int64_t> pending_word{0};
    // 2 * the winning cancel()s of this shard's threads: their slots given
    // back (see Counting) and metrics().cancelled, exact when cancel()
    // returns. On the line of pending_word, which the same thread writes.
    std::atomic<int64_t> cancel_word{0};
    // Nodes pushed on `notices` and not yet drained: a pusher adds one
    // after its push, the worker subtracts what it popped (so it may read
    // below zero for a moment). The push that brings it to
    // kNoticeBacklogWake wakes a sleeping worker (BacklogWaker), so that
    // cancelled nodes wait for a bounded count, not for the next deadline.
    std::atomic<int64_t> notice_backlog{0};
    NodeLane lane;
    NodeQueue queue;
    // Armed nodes the worker must look at again (kNoticed): cancelled ones
    // to unlink, ones moved to an earlier deadline to file again.
    NodeQueue notices;
  };

  // This thread's shard: threads take shards round-robin on first use.
  static int ThisThreadShard() {
    static std::atomic<uint32_t> next{0};
    thread_local const int shard = static_cast<int>(
        next.fetch_add(1, std::memory_order_relaxed) % kShards);
    return shard;
  }
  // Where a thread of `shard` reserves a slot (newTimeout).
  std::atomic<int64_t>& CountWord(int shard) {
    return shards[limited ? 0 : shard].pending_word;
  }
  // A winning cancel() on a thread of `shard` gives its slot back and is
  // counted; the release store is its last touch of this state.
  void ReleaseCancelled(int shard) {
    if (limited) {
      shards[shard].cancel_word.fetch_add(kOne, std::memory_order_relaxed);
      shards[0].pending_word.fetch_sub(kOne, std::memory_order_release);
    } else {
      shards[shard].cancel_word.fetch_add(kOne, std::memory_order_release);
    }
  }
  // Winning cancel() calls so far.
  int64_t CancelCount() const {
    int64_t sum = 0;
    for (const Shard& s : shards) {
      sum += Count(s.cancel_word.load(std::memory_order_relaxed));
    }
    return sum;
  }
  std::atomic<int64_t>& WorkerReleaseWord() {
    return limited ? shards[0].pending_word : worker_word;
  }
  // The sum of all counts. Exact when no call is in flight; otherwise a
  // snapshot that may be off by the calls in flight, or below zero.
  int64_t SumCounts(std::memory_order order) const {
    int64_t sum = Count(worker_word.load(order));
    for (const Shard& s : shards) {
      sum += Count(s.pending_word.load(order));
      if (!limited) sum -= Count(s.cancel_word.load(order));
    }
    return sum;
  }

  // stop(): sets the closed bit in every count word, after which every
  // reservation fails; true if this call set it first.
  bool Close() {
    bool first = false;
    for (Shard& shard : shards) {
      first |=
          !(shard.pending_word.fetch_or(kClosed, std::memory_order_acq_rel) &
            kClosed);
    }
    return first;
  }
  bool closed() const {
    return shards[0].pending_word.load(std::memory_order_acquire) & kClosed;
  }

  // How many nodes may wait on one shard's notice queue while the worker
  // sleeps; the push that reaches it wakes the worker.
  static constexpr int64_t kNoticeBacklogWake = 4096;

  // Pushes `node` (kNoticed already set by the caller's RMW) on the notice
  // queue of `shard`, waking the worker when the backlog reaches its bound.
  void PushNotice(TimeoutNode* node, int shard) {
    Shard& s = shards[shard];
    s.notices.Push(node);
    if (s.notice_backlog.fetch_add(1, std::memory_order_relaxed) + 1 ==
        kNoticeBacklogWake) {
      waker->WakeForBacklog();
    }
  }

  // The facade's Timer, opaque to the engine, for Timeout::timer(); null
  // once the Timer's destructor has started.
  std::atomic<void*> owner{nullptr};
  // Wakes the worker when a backlog calls for it (the worker itself); called
  // only while the caller holds a pending slot, which keeps it alive.
  BacklogWaker* waker = nullptr;
  // Set by an engine that its owner thread drives (LocalEngine), null for a
  // Timer's worker: see OwnerCanceller. Reached only through a node that
  // carries the calling thread's tag.
  OwnerCanceller* owner_canceller = nullptr;
  // The timer's clock, for Timeout::reset(): reached only under the same
  // keep-alive as `waker`. `monotonic_clock`: it is CLOCK_MONOTONIC, read
  // inline (MonotonicNanos()).
  Clock* clock = nullptr;
  bool monotonic_clock = false;
  int64_t NowNanos() const {
    return monotonic_clock ? MonotonicNanos() : clock->NowNanos();
  }
  bool limited = false;  // set before any producer can run
  Shard shards[kShards];
  alignas(64) std::atomic<int64_t> worker_word{0};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_SHARED_STATE_H_
