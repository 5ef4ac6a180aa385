// worker/lane.h
// -----------------------------------------------------------------------------
// Internal. A bounded lock-free ring of pointers with many producers and one
// consumer, from which a producer may take an item back before the consumer
// gets to it. Each producer shard of a timer has one (the "fast lane" of
// worker/worker.h): newTimeout() puts its node here, and a cancel() that
// comes before the worker has taken the node takes it back out, so the
// worker never touches the node and the cancelling thread frees it while
// its cache still holds it.
//
// Ground rules
//   * Claim() and Publish() may be called by any number of threads at once;
//     a producer calls Publish(index, item) once for each index Claim() gave
//     it. Claim() never blocks: when the ring is full it returns -1 and the
//     caller uses another path.
//   * TakeBackPending(Cell(index), item) may be called by any thread that
//     keeps `item` alive, after Publish(index, item) happened before it (the
//     caller got the item from the producer). Exactly one of it and the
//     consumer's Pop() gets a published item. It may be called even after
//     the lane has been destroyed: cell arrays are type-stable
//     (worker/lane_arrays.h), so the CAS then lands in a cell that does not
//     hold `item` and fails.
//   * A successful TakeBackPending() leaves the cell unpublished, and the
//     caller must settle it, or the consumer waits at it forever: Unclaim()
//     on the lane that owns it, or Bury() (a tombstone the consumer skips).
//   * Unclaim() moves tail_ back by one, and only from the value that
//     follows the cell: no cell claimed after it is ever given back, and the
//     consumer, which never passes an unpublished cell, has not passed it.
//     A consumer whose snapshot still counts the cell finds it unpublished
//     (kNotYet) and takes whatever the next Claim() publishes there.
//   * Pop() and Empty() are for one consumer thread at a time.
//   * An item is published at most once in its life, so a cell can never hold
//     the same item again after Pop() has taken it: a take-back cannot take
//     the wrong one (no ABA).
//
// Memory ordering
//   Claim() is a CAS on tail_ (seq_cst, so that it orders against the
//   worker's "about to sleep" store like the pending queue's exchange does,
//   see worker/worker.h); so is Unclaim(). Publish() stores the item with
//   release; Pop() exchanges the cell with nullptr (acq_rel), so everything
//   the producer wrote before Publish() is visible to the consumer, and a
//   TakeBackPending() CAS (acq_rel) on the same cell is ordered against it:
//   one of the two sees the item, the other sees nullptr (or, after Bury(),
//   the tombstone). Pop() then stores head_ + 1 (release); a producer reuses
//   a cell only after it has loaded (acquire) a head_ past it, directly or
//   through seen_head_ (published with release by the producer that loaded
//   it), so a cell is only reused after the consumer has emptied it. A cell
//   that is claimed but not yet published reads as nullptr: Pop() reports
//   kNotYet and tries it again later (the producer is between Claim() and
//   Publish(), or between TakeBackPending() and Bury()). The cell array is
//   allocated by the first Claim() (CAS on cells_); the consumer reads
//   cells_ only after it has seen a claimed index, which comes after the
//   allocation.
//
// Cost: Claim is a load and a CAS, Publish a store; a take-back one CAS,
// then a load and a CAS (Unclaim) or a store (Bury); Pop one exchange and a
// store. Memory: kCapacity * 8 bytes, taken on first use from
// worker/lane_arrays.h and given back there, never freed.

#ifndef TICKWHEEL_WORKER_LANE_H_
#define TICKWHEEL_WORKER_LANE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "tickwheel/base/interleave.h"
#include "tickwheel/worker/lane_arrays.h"

namespace tickwheel::internal {

template <typename T, uint32_t kCapacity>
class Lane {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "a power of two");

 public:
  static constexpr uint32_t kMask = kCapacity - 1;

  Lane() = default;
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() { GiveLaneArray(cells_.load(std::memory_order_relaxed), kBytes); }

  // Reserves the next cell; returns its index (< kCapacity), or -1 when the
  // ring is full or its array cannot be allocated.
  int64_t Claim() {
    if (Cells() == nullptr) return -1;
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    do {
      TICKWHEEL_INTERLEAVE_POINT();
      if (tail - seen_head_.load(std::memory_order_acquire) >= kCapacity &&
          !RefreshHead(tail)) {
        return -1;
      }
    } while (!tail_.compare_exchange_weak(
        tail, tail + 1, std::memory_order_seq_cst, std::memory_order_relaxed));
    return static_cast<int64_t>(tail & kMask);
  }

  // Makes `item` visible to the consumer in the cell Claim() returned.
  void Publish(int64_t index, T* item) {
    TICKWHEEL_INTERLEAVE_POINT();
    cells_.load(std::memory_order_relaxed)[index].store(
        item, std::memory_order_release);
  }

  // The address of cell `index`, which Claim() returned.
  std::atomic<T*>* Cell(int64_t index) {
    return &cells_.load(std::memory_order_relaxed)[index];
  }

  // Taking an item back, in two steps. TakeBackPending() moves `item` out
  // of `cell` (a Cell() of this or of a destroyed lane) if the consumer has
  // not taken it, and leaves the cell unpublished (the consumer waits there,
  // as for a producer between Claim() and Publish()); true if it took the
  // item, which the caller then owns. The caller must then settle the cell:
  // Unclaim() it if it is its lane's last claimed cell, else Bury() it (a
  // tombstone, which the consumer skips).
  static bool TakeBackPending(std::atomic<T*>* cell, T* item) {
    TICKWHEEL_INTERLEAVE_POINT();
    T* expected = item;
    return cell->compare_exchange_strong(expected, nullptr,
                                         std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }
  // Gives `cell` back to the ring if it belongs to this lane and no cell has
  // been claimed after it (a CAS of tail_ back by one); false otherwise.
  // The consumer cannot have passed it: it stops at an unpublished cell.
  bool Unclaim(std::atomic<T*>* cell) {
    std::atomic<T*>* cells = cells_.load(std::memory_order_relaxed);
    if (cells == nullptr || cell < cells || cell >= cells + kCapacity) {
      return false;
    }
    const auto index = static_cast<uint64_t>(cell - cells);
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    TICKWHEEL_INTERLEAVE_POINT();
    return ((tail - 1) & kMask) == index &&
           tail_.compare_exchange_strong(tail, tail - 1,
                                         std::memory_order_seq_cst,
                                         std::memory_order_relaxed);
  }
  static void Bury(std::atomic<T*>* cell) {
    TICKWHEEL_INTERLEAVE_POINT();
    cell->store(Tombstone(), std::memory_order_release);
  }

  enum class Popped { kItem, kTakenBack, kNotYet, kEmpty };

  // Takes the claimed cells into account up to now; Pop() sees no cell
  // claimed after the last Refresh(). Consumer only. Popping a snapshot
  // rather than chasing tail_ keeps the consumer off the cache lines that
  // producers are still writing: it reaches a line once they have moved on,
  // except at the snapshot's edge.
  void Refresh() {
    seen_tail_ = tail_.load(std::memory_order_acquire);
    if (consumer_cells_ == nullptr) {
      consumer_cells_ = cells_.load(std::memory_order_acquire);
    }
  }

  // Takes the oldest cell claimed before the last Refresh(). kItem: `*item`
  // is set. kTakenBack: the cell held a tombstone. kNotYet: its producer has
  // not published yet; call again later. kEmpty: no such cell. Consumer
  // only.
  Popped Pop(T** item) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == seen_tail_) return Popped::kEmpty;
    TICKWHEEL_INTERLEAVE_POINT();
    T* got = consumer_cells_[head & kMask].exchange(nullptr,
                                                    std::memory_order_acq_rel);
    if (got == nullptr) return Popped::kNotYet;
    TICKWHEEL_INTERLEAVE_POINT();
    head_.store(head + 1, std::memory_order_release);
    if (got == Tombstone()) return Popped::kTakenBack;
    *item = got;
    return Popped::kItem;
  }

  // After Pop() reported kNotYet: forgets the cells that Unclaim() gave
  // back since the last Refresh(), so that a consumer waiting at a cell
  // taken back and then given back stops waiting (Pop() reports kEmpty).
  // tail_ moves back only by Unclaim(), and only from the last claimed cell,
  // so no cell published before it is dropped. Consumer only.
  void Recount() {
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    if (tail < seen_tail_) seen_tail_ = tail;
  }

  // True when no cell is claimed and not yet popped, counting cells whose
  // producer has not published yet. Consumer only.
  bool Empty() const {
    return head_.load(std::memory_order_relaxed) ==
           tail_.load(std::memory_order_seq_cst);
  }

 private:
  static T* Tombstone() { return reinterpret_cast<T*>(alignof(T)); }

  // Producers read head_, which the consumer writes on every Pop(), only
  // when the last head they saw says the ring is full: the common Claim()
  // touches no line the consumer writes. Stale is safe: seen_head_ <= head_
  // always, so a producer only ever underestimates the room. True when there
  // is room for `tail`.
  bool RefreshHead(uint64_t tail) {
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t seen = seen_head_.load(std::memory_order_relaxed);
    while (seen < head && !seen_head_.compare_exchange_weak(
                              seen, head, std::memory_order_release,
                              std::memory_order_relaxed)) {
    }
    return tail - head < kCapacity;
  }

  static constexpr size_t kBytes = sizeof(std::atomic<T*>) * kCapacity;
  static_assert(std::atomic<T*>::is_always_lock_free);

  // The cell array, every cell nullptr (unpublished) on first use; nullptr
  // if out of memory.
  std::atomic<T*>* Cells() {
    std::atomic<T*>* cells = cells_.load(std::memory_order_acquire);
    if (cells != nullptr) return cells;
    bool reused = false;
    void* memory = TakeLaneArray(kBytes, &reused);
    if (memory == nullptr) return nullptr;
    // A fresh array is zeroed memory, which is how a lock-free atomic
    // pointer holds nullptr; a reused one is cleared with atomic stores,
    // since a late TakeBackPending() aimed at its former lane may race them.
    auto* fresh = static_cast<std::atomic<T*>*>(memory);
    if (reused) {
      for (uint32_t i = 0; i < kCapacity; ++i) {
        fresh[i].store(nullptr, std::memory_order_relaxed);
      }
    }
    if (cells_.compare_exchange_strong(cells, fresh, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return fresh;
    }
    GiveLaneArray(fresh, kBytes);  // another producer got one first
    return cells;
  }

  // Two lines: the producers' and the consumer's. Each side reads the
  // other's line only at a batch's edge (Refresh(), RefreshHead()), so the
  // common Claim() and Pop() touch no line the other side writes; that is
  // why the array's address is on the producers' line and the consumer
  // keeps its own copy.
  alignas(64) std::atomic<uint64_t> tail_{0};  // producers CAS
  std::atomic<uint64_t> seen_head_{0};  // producers: a head_ they have read
  std::atomic<std::atomic<T*>*> cells_{nullptr};  // set once, by a producer
  alignas(64) std::atomic<uint64_t> head_{0};     // the consumer stores
  uint64_t seen_tail_ = 0;  // consumer-only: tail_ at the last Refresh()
  // Consumer-only: cells_, loaded by Refresh() until it is set. Read after
  // tail_ with acquire: a claim counted in seen_tail_ came after its
  // producer's CAS of the array, so whenever Pop() has a cell to take, this
  // is the array.
  std::atomic<T*>* consumer_cells_ = nullptr;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_LANE_H_
