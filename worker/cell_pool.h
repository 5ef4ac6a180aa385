// worker/cell_pool.h
// -----------------------------------------------------------------------------
// Internal. CellPool<Tag, kCellSize>: a process-wide pool of fixed-size cells
// with a cache per thread, for the one object a timer allocates per timeout
// (TimeoutNode, worker/timeout_node.h). This file is the fast path: each
// thread's cache and the inline Allocate() and Free(). Behind it:
//
//   worker/cell_depot.h    the shared depot of chunks that caches take cells
//                          from and give them back to, in batches
//   worker/chunk.h         a chunk's layout and bitmap, and the kernel calls
//   worker/chunk_policy.h  when chunks are faulted in ahead of need, and
//                          when spare ones go back to the kernel
//   worker/decay_wakers.h  who is woken when memory is due to go back
//
// Why a pool, why address order, and how the parts fit: docs/DESIGN.md
// ("The node pool").
//
// Each thread caches two lists per pool, threaded through each free cell's
// first word: `recent`, the cells it freed itself, newest first (so that a
// schedule-then-cancel loop reuses the cell still in cache), and `refill`,
// up to kBatch cells taken from the depot in ascending address order.
// Allocate() pops `recent`, then `refill`, and only then takes kBatch cells
// from the depot; Free() pushes on `recent`, and once that holds kBatch
// cells they go back to the depot whole.
//
// Holding frees. Between HoldFrees() and ReturnHeld() a thread's Free()
// keeps up to kHoldCap cells on `recent` before it goes to the depot. The
// wheel's walk over a burst frees one cell per expiry, and the depot's
// bookkeeping for a returned cell (a bit in its chunk's bitmap, under the
// depot's mutex) would otherwise sit between one run and the next; held,
// it comes after the walk, in batches of kBatch, so that the depot's mutex
// is never held for long. The memory held is that of timeouts that were
// pending a moment before.
//
// Ground rules
//   * Allocate() and Free() may be called from any thread; a cell may be
//     freed by another thread than the one that allocated it. A cell's
//     contents pass between threads through the owner's synchronisation
//     (the node's reference count) or through the depot's mutex; a cache is
//     its thread's alone.
//   * A thread's cached cells go back to the depot when the thread exits. A
//     cell freed after that, by a later thread_local destructor of the same
//     thread, goes straight to the depot, and one allocated then comes
//     straight from it.
//   * The pool lives for the life of the process: cells may be freed during
//     static destruction, or by detached threads.
//
// Sanitizers: under AddressSanitizer TimeoutNode bypasses the pool, so that
// ASan and LeakSanitizer track every node; the pool is tested directly
// (tests/cell_pool_test.cc), also under TSan.
//
// Cost: Allocate() and Free() are an inline pop or push on a thread-local
// list; one call in kBatch makes one depot round trip (one mutex). Memory:
// up to 2 * kBatch cached cells per thread and pool, kHoldCap + kBatch
// while the thread holds its frees.

#ifndef TICKWHEEL_WORKER_CELL_POOL_H_
#define TICKWHEEL_WORKER_CELL_POOL_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tickwheel/worker/cell_depot.h"
#include "tickwheel/worker/chunk.h"

namespace tickwheel::internal {

// One thread's cache of one pool. Trivial, so that a thread_local instance
// needs no guard and is still usable while the thread exits.
struct CellCache {
  FreeCell* recent;  // freed by this thread, newest first
  FreeCell* refill;  // from the depot, ascending addresses
  uint32_t recent_count;
  // Free() pushes on `recent` while recent_count is below this: 0 until a
  // flusher gives the cells back at thread exit (registered) and after that
  // flush, then the pool's batch, or the hold's cap while the thread holds
  // frees.
  uint32_t recent_limit;
  bool exited;  // flushed at thread exit: bypass the cache

  // CellPool's slow paths, out of line (worker/cell_pool.cc).
  // AllocateSlow(): both lists are empty. Takes up to `batch` cells from the
  // depot, returns the first and keeps the rest in `refill`; once the
  // thread's flush has run, takes one cell and caches nothing. nullptr when
  // memory is exhausted.
  // FreeSlow(): `recent` holds `batch` cells, which go back to the depot
  // whole, or the cache is not registered for the flush at thread exit yet
  // (it is now, unless that flush has run: then `cell` goes straight back).
  void* AllocateSlow(CellDepot& depot, uint32_t batch);
  void FreeSlow(CellDepot& depot, FreeCell* cell, uint32_t batch);
  // HoldFrees() and ReturnHeld() of the pool (see the file comment).
  void Hold(CellDepot& depot, uint32_t batch, uint32_t cap);
  void ReturnHeld(CellDepot& depot, uint32_t batch);
  // Gives `recent` back to `depot`, `batch` cells per mutex hold, and
  // empties it.
  void GiveRecent(CellDepot& depot, uint32_t batch);
};
static_assert(std::is_trivial_v<CellCache>,
              "a thread_local CellCache must need no constructor or guard");

// A pool of kCellSize-byte cells, aligned to 16 bytes. `Tag` keeps pools of
// equal size apart. All members are static; see the file comment.
template <typename Tag, size_t kCellSize>
class CellPool {
 public:
  static_assert(kCellSize >= sizeof(FreeCell) && kCellSize % 16 == 0,
                "cells hold a link and keep 16-byte alignment");
  static constexpr uint32_t kBatch = 256;
  static constexpr uint32_t kHoldCap = uint32_t{1} << 20;

  // A cell of kCellSize bytes, 16-aligned; nullptr when memory is exhausted.
  static void* Allocate() {
    CellCache& c = cache_;
    if (FreeCell* cell = c.recent) {
      c.recent = cell->next;
      --c.recent_count;
      return cell;
    }
    if (FreeCell* cell = c.refill) {
      c.refill = cell->next;
      return cell;
    }
    return c.AllocateSlow(Depot(), kBatch);
  }

  // Returns a cell obtained from Allocate(), from any thread.
  static void Free(void* p) {
    CellCache& c = cache_;
    auto* cell = static_cast<FreeCell*>(p);
    if (c.recent_count < c.recent_limit) {
      cell->next = c.recent;
      c.recent = cell;
      ++c.recent_count;
      return;
    }
    c.FreeSlow(Depot(), cell, kBatch);
  }

  // From now on this thread's Free() keeps up to kHoldCap cells before it
  // returns them; ReturnHeld() returns them (see "Holding frees" above).
  // Either may be called any number of times; a thread that exits returns
  // what it holds.
  static void HoldFrees() { cache_.Hold(Depot(), kBatch, kHoldCap); }
  static void ReturnHeld() {
    if (cache_.recent_limit > kBatch) cache_.ReturnHeld(Depot(), kBatch);
  }

  // The pool's depot: the worker fills its reserve and runs its decay.
  static CellDepot& Depot() {
    // Never destroyed: cells may be freed during static destruction.
    static CellDepot* depot = new CellDepot(kCellSize);
    return *depot;
  }

 private:
  // initial-exec: one %fs-relative access even when linked into a shared
  // library (the model glibc's and tcmalloc's caches use).
  __attribute__((
      tls_model("initial-exec"))) static thread_local CellCache cache_;
};

template <typename Tag, size_t kCellSize>
__attribute__((tls_model(
    "initial-exec"))) thread_local CellCache CellPool<Tag, kCellSize>::cache_{};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_CELL_POOL_H_
