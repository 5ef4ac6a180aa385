// timer/wheel.h
// -----------------------------------------------------------------------------
// Internal. The hashed timing wheel of Varghese & Lauck ("scheme 6"), as in
// Netty's HashedWheelTimer: a power-of-two ring of buckets, each an intrusive
// doubly-linked list of TimeoutNodes.
//
// The wheel is a plain single-threaded data structure that is told the time in
// ticks; it reads no clock, starts no thread and never sleeps, so the same
// calls always give the same result. The worker (worker/worker.h) owns it and
// is the only thread that touches it.
//
// Geometry
//   ticks_per_wheel = L = 2^bits buckets; tick k is processed once the clock
//   has reached the end of tick k, (k + 1) * tick_duration after startTime. A
//   node due at tick `due_tick` lives in bucket `due_tick & (L - 1)`, and
//   while the wheel is about to process tick `t` its
//       remainingRounds = (due_tick - t) >> bits
//   is the number of times the wheel will pass that bucket before the node is
//   due, as in Netty.
//
// Departure from Netty: Netty stores remainingRounds in each node and
// decrements it on every pass. tickwheel stores the due tick instead and
// derives the rounds: a pass only compares, never writes, and the node's
// bucket is known from the node itself, which makes Remove() O(1) without a
// back pointer to the bucket.
//
// Invariants (CheckInvariants(t) verifies them for a wheel about to process t)
//   I1  A node is linked in exactly one bucket iff `in_bucket` is set.
//   I2  Bucket lists are well formed: prev/next agree, head->prev and
//       tail->next are null, and `size()` equals the number of linked nodes.
//   I3  A node in bucket b has due_tick & (L - 1) == b and due_tick >= t: it
//       is handed out by ExpireTick(due_tick), not before and not later.
//
// Cost
//   Insert, Remove: O(1). ExpireTick: O(nodes in the bucket): nodes of later
//   rounds are looked at once per revolution (Netty's trade-off: cheap
//   inserts, far-future nodes are walked once per revolution).
//
// This class is thread-compatible (one thread at a time).

#ifndef TICKWHEEL_TIMER_WHEEL_H_
#define TICKWHEEL_TIMER_WHEEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "timer/timeout_node.h"

namespace tickwheel::internal {

class Wheel {
 public:
  static constexpr int kMaxTicksPerWheel = 1 << 30;

  // The number of buckets a wheel gets for a requested `ticks_per_wheel`:
  // rounded up to a power of two. Requires 1 <= ticks_per_wheel <= 2^30.
  static int NormalizeTicksPerWheel(int ticks_per_wheel);

  // `ticks_per_wheel` must already be normalized.
  explicit Wheel(int ticks_per_wheel);
  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  int ticks_per_wheel() const { return static_cast<int>(num_buckets_); }
  int64_t size() const { return size_; }

  // The tick at which a node with `deadline` (nanoseconds after start) is due,
  // for a tick of `tick_nanos`: the first tick whose end is at or after the
  // deadline. Tick k ends at (k + 1) * tick_nanos, so this never runs a task
  // early. Never overflows.
  static int64_t DueTick(int64_t deadline, int64_t tick_nanos);

  // Links `node` so that ExpireTick(due_tick) hands it out, given that the
  // wheel is about to process `current_tick`. A `due_tick` in the past counts
  // as `current_tick`: nothing is scheduled into a tick already processed.
  void Insert(TimeoutNode* node, int64_t due_tick, int64_t current_tick);

  // Unlinks `node`, which must be linked.
  void Remove(TimeoutNode* node);

  // Processes the bucket of `tick`: every node due at or before `tick` (its
  // remainingRounds is zero) is unlinked and passed to `expire(node)`, in
  // insertion order; nodes of later rounds stay. If `expire` returns false, the walk stops there and the
  // rest of the bucket is left untouched (used when the timer is stopping).
  // `expire` must not call Insert or Remove. Returns the number of nodes
  // handed out.
  template <typename F>
  int64_t ExpireTick(int64_t tick, F&& expire);

  // Unlinks every node, calling `f(node)` for each, bucket by bucket.
  template <typename F>
  void DrainAll(F&& f);

  // remainingRounds of a linked node while the wheel is about to process
  // `current_tick`.
  int64_t RemainingRounds(const TimeoutNode* node, int64_t current_tick) const {
    return (node->due_tick - current_tick) >> bits_;
  }

  // "" when invariants I1 to I3 hold for a wheel about to process
  // `current_tick`, else a description of the first violation with the state
  // around it. O(size() + ticks_per_wheel()).
  std::string CheckInvariants(int64_t current_tick) const;

 private:
  struct Bucket {
    TimeoutNode* head = nullptr;
    TimeoutNode* tail = nullptr;
  };

  static TimeoutNode* Next(const TimeoutNode* n) {
    return n->next.load(std::memory_order_relaxed);
  }

  struct FreeDeleter {
    void operator()(Bucket* p) const;
  };

  // calloc'ed: a large wheel costs address space, not memory, until used.
  std::unique_ptr<Bucket[], FreeDeleter> buckets_;
  int64_t num_buckets_;
  int64_t mask_;
  int bits_;
  int64_t size_ = 0;
};

template <typename F>
int64_t Wheel::ExpireTick(int64_t tick, F&& expire) {
  Bucket& bucket = buckets_[tick & mask_];
  int64_t expired = 0;
  for (TimeoutNode* n = bucket.head; n != nullptr;) {
    TimeoutNode* following = Next(n);
    if (n->due_tick <= tick) {
      Remove(n);
      ++expired;
      if (!expire(n)) break;
    }
    n = following;
  }
  return expired;
}

template <typename F>
void Wheel::DrainAll(F&& f) {
  for (int64_t b = 0; b < num_buckets_; ++b) {
    Bucket& bucket = buckets_[b];
    while (bucket.head != nullptr) {
      TimeoutNode* n = bucket.head;
      Remove(n);
      f(n);
    }
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_WHEEL_H_
