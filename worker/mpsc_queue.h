// worker/mpsc_queue.h
// -----------------------------------------------------------------------------
// An intrusive, unbounded, lock-free multi-producer / single-consumer FIFO
// queue (Dmitry Vyukov's design). tickwheel uses two of them per producer
// shard: the pending queue (newTimeout -> worker) and the notice queue
// (cancel() and a reset() to an earlier deadline -> worker).
//
// "Intrusive" means the queue allocates nothing: each element carries its own
// link, named by the `Link` template argument, so pushing costs one atomic
// exchange and one store, whatever the number of producers.
//
// Ground rules
//   * Push() may be called from any number of threads at once. It is wait-free.
//   * Pop() and Empty() may be called by one consumer thread at a time (the
//     worker; after the worker has been joined, the thread that joined it).
//   * An element is pushed at most once at a time: its link belongs to the
//   queue
//     from Push() until Pop() returns it.
//   * After Pop() returns an element, no producer will ever write its link
//     again, so the consumer may reuse the link for its own purposes (a timer
//     node's link then serves the notice queue).
//
// Memory ordering
//   A producer writes the element, then exchanges `head_` (seq_cst) and stores
//   the link of the previous head (release). The consumer reads links with
//   acquire, so everything the producer wrote before Push() is visible to the
//   consumer once Pop() returns the element. The exchange on `head_` orders
//   producers among themselves; it is the queue's linearisation point.
//   The exchange and Empty()'s load are seq_cst so that a consumer about to
//   sleep can use them in a Dekker-style handshake: it publishes "I am going to
//   sleep" (seq_cst store), then checks Empty(); a producer pushes, then reads
//   that flag (seq_cst load). At least one of them sees the other, so a push
//   never goes unnoticed by a sleeping consumer. On x86 both cost the same as
//   the weaker orders.
//
// Transient emptiness
//   Between a producer's exchange and its link store, the element is in the
//   queue but not yet reachable. Pop() then returns nullptr although Empty() is
//   false; the element becomes visible a moment later. Callers that must see
//   every element (the timer's final drain) wait until no producer can still
//   be inside Push(): the timer's stop() waits until every pending slot has
//   been given back, and a producer gives its slot back only after its push.
//   A consumer about to sleep treats a queue that is not Empty() as work.
//
// Cost: Push is one XCHG plus one store; Pop is a few loads, and on the rare
// path where the queue holds a single element, one re-push of the stub.
//
// This class is thread-safe as described above.

#ifndef TICKWHEEL_WORKER_MPSC_QUEUE_H_
#define TICKWHEEL_WORKER_MPSC_QUEUE_H_

#include <atomic>
#include <cstddef>

#include "tickwheel/base/interleave.h"

namespace tickwheel::internal {

// T must be default-constructible (the queue embeds one T as its stub) and have
// a member `std::atomic<T*> Link`.
template <typename T, std::atomic<T*> T::*Link>
class MpscQueue {
 public:
  MpscQueue() : head_(&stub_), tail_(&stub_) {
    (stub_.*Link).store(nullptr, std::memory_order_relaxed);
  }
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Appends `node`. Any thread; wait-free.
  void Push(T* node) {
    (node->*Link).store(nullptr, std::memory_order_relaxed);
    T* prev = head_.exchange(node, std::memory_order_seq_cst);
    TICKWHEEL_INTERLEAVE_POINT();  // the transient emptiness below
    (prev->*Link).store(node, std::memory_order_release);
  }

  // Removes and returns the oldest fully-pushed element, or nullptr when there
  // is none (see "Transient emptiness"). Consumer thread only.
  T* Pop() {
    T* tail = tail_;
    T* next = (tail->*Link).load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = (next->*Link).load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    // `tail` is the last reachable element. If a producer has already swung
    // head_ past it, its link will be written shortly: report empty for now.
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;
    // Re-insert the stub behind `tail` so that `tail` can be handed out while
    // the queue keeps a node to hang future pushes on.
    Push(&stub_);
    next = (tail->*Link).load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  // True when no element has been pushed and not yet popped, counting elements
  // whose Push() is still in progress. Consumer thread only.
  bool Empty() const {
    return tail_ == &stub_ && head_.load(std::memory_order_seq_cst) == &stub_;
  }

 private:
  // Over-aligned so that a T with over-aligned storage inside (TimeoutNode)
  // is valid here too.
  alignas(std::max_align_t) T stub_;
  // Newest element; producers exchange it. Own cache line: producers hammer it.
  alignas(64) std::atomic<T*> head_;
  // Oldest element; consumer-only, so a plain pointer.
  alignas(64) T* tail_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_MPSC_QUEUE_H_
