// timer/cell_pool.h
// -----------------------------------------------------------------------------
// Internal. A process-wide pool of fixed-size memory cells with a cache per
// thread, for the one object a timer allocates per timeout (TimeoutNode).
//
// Why not malloc: a timeout is allocated by the thread that schedules it and
// freed by whichever thread drops the last reference, usually the worker
// after the task ran, or the canceller. glibc's free() of a 64-byte chunk
// from another thread is a third of the worker's time in a mass expiry, and
// its chunk header costs 8 bytes per cell. Here a cell is exactly kCellSize
// bytes and both calls are a few instructions on a thread-local list.
//
// Design (Bonwick's magazines, as in Solaris' kmem and tcmalloc's per-CPU
// caches): each thread caches up to 2 * kBatch free cells in two singly
// linked lists ("loaded" and "spare"), threaded through each free cell's
// first word. Allocate() pops from `loaded`; Free() pushes onto it. When
// `loaded` is empty or full, the lists swap; only when both are, a whole list
// of kBatch cells moves to or from the shared depot under its mutex: one lock
// per kBatch operations at worst, none in a steady state where one thread
// allocates and frees. Fresh cells are carved from 2 MiB chunks (mmap, asked
// for transparent huge pages: a worker that walks a million scattered cells
// then misses the TLB far less), kBatch cells at a time, handed out by
// bumping a pointer so that a cell is not touched before it is used.
//
// Ground rules
//   * Allocate() and Free() may be called from any thread. A cell may be
//     freed by another thread than the one that allocated it; it then joins
//     the freeing thread's cache.
//   * Memory goes back to the pool, never to the operating system: a program
//     keeps its peak number of live cells mapped, as with malloc arenas. The
//     pool lives for the life of the process (it is never destroyed, so cells
//     may be freed during static destruction or by detached threads).
//   * A thread's cached cells go back to the depot when the thread exits. A
//     cell freed after that, by a later thread_local destructor of the same
//     thread, goes straight to the depot.
//
// Memory ordering: a cell's contents are handed between threads either by
// its owner's own synchronisation (the node's reference count, acq_rel) or
// through the depot's mutex. The thread caches are thread-local.
//
// Sanitizers: under AddressSanitizer TimeoutNode bypasses the pool (see
// timer/timeout_node.h), so ASan and LeakSanitizer track every node; this
// class is then tested directly (tests/cell_pool_test.cc).
//
// Cost: Allocate() and Free() are inline, a TLS load and a list pop or push
// (about 2 ns); one depot mutex round trip per kBatch calls when threads only
// free or only allocate. Memory: kCellSize per cell, no header; up to
// 2 * kBatch cached cells and one partly carved batch per thread.

#ifndef TICKWHEEL_TIMER_CELL_POOL_H_
#define TICKWHEEL_TIMER_CELL_POOL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "worker/mutex.h"

namespace tickwheel::internal {

struct FreeCell {
  FreeCell* next;
};

// The shared part of one pool: full lists of free cells and the chunk being
// carved. This class is thread-safe.
class CellDepot {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  // A free list of `count` cells, or a run of `count` fresh cells starting at
  // `fresh` (then `head` is null).
  struct Batch {
    FreeCell* head = nullptr;
    char* fresh = nullptr;
    uint32_t count = 0;
  };

  explicit CellDepot(size_t cell_size) : cell_size_(cell_size) {}
  CellDepot(const CellDepot&) = delete;
  CellDepot& operator=(const CellDepot&) = delete;

  // A list given back earlier, else up to `count` fresh cells (count may be
  // smaller at the end of a chunk). count == 0 when no memory is left.
  Batch Take(uint32_t count) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes back a list of cells (any length > 0).
  void Give(FreeCell* head, uint32_t count) ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes mapped so far (chunks are never unmapped). For tests and metrics.
  size_t MappedBytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t cell_size_;
  mutable Mutex mu_;
  std::vector<Batch> lists_ ABSL_GUARDED_BY(mu_);
  char* carve_ ABSL_GUARDED_BY(mu_) = nullptr;
  char* carve_end_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t mapped_ ABSL_GUARDED_BY(mu_) = 0;
};

// One thread's cache of one pool. Trivial, so that a thread_local instance
// needs no guard and is still readable while the thread exits.
struct CellCache {
  FreeCell* loaded;
  FreeCell* spare;
  uint32_t loaded_count;
  uint32_t spare_count;
  char* fresh;       // carved but never used cells: [fresh, fresh_end)
  char* fresh_end;
  bool registered;   // a CacheFlusher will give the cells back at exit
  bool exited;       // flushed at thread exit: bypass the cache
};

// Slow paths of CellPool, out of line.
void* CellAllocateSlow(CellCache& cache, CellDepot& depot, size_t cell_size,
                       uint32_t batch);
void CellFreeSlow(CellCache& cache, CellDepot& depot, size_t cell_size,
                  FreeCell* cell, uint32_t batch);

// A pool of kCellSize-byte cells, aligned to 16 bytes. `Tag` keeps pools of
// equal size apart. All members are static; see the file comment.
template <typename Tag, size_t kCellSize>
class CellPool {
 public:
  static_assert(kCellSize >= sizeof(FreeCell) && kCellSize % 16 == 0,
                "cells hold a link and keep 16-byte alignment");
  static constexpr uint32_t kBatch = 256;

  // A cell of kCellSize bytes, 16-aligned; nullptr when memory is exhausted.
  static void* Allocate() {
    CellCache& c = cache_;
    if (FreeCell* cell = c.loaded) {
      c.loaded = cell->next;
      --c.loaded_count;
      return cell;
    }
    if (c.fresh != c.fresh_end) {
      void* cell = c.fresh;
      c.fresh += kCellSize;
      return cell;
    }
    return CellAllocateSlow(c, Depot(), kCellSize, kBatch);
  }

  // Returns a cell obtained from Allocate(), from any thread.
  static void Free(void* p) {
    CellCache& c = cache_;
    auto* cell = static_cast<FreeCell*>(p);
    if (c.loaded_count < kBatch && c.registered) {
      cell->next = c.loaded;
      c.loaded = cell;
      ++c.loaded_count;
      return;
    }
    CellFreeSlow(c, Depot(), kCellSize, cell, kBatch);
  }

  static CellDepot& Depot() {
    // Never destroyed: cells may be freed during static destruction.
    static CellDepot* depot = new CellDepot(kCellSize);
    return *depot;
  }

 private:
  // initial-exec: one %fs-relative load even when linked into a shared
  // library (the model glibc's and tcmalloc's caches use).
  __attribute__((tls_model("initial-exec"))) static thread_local CellCache
      cache_;
};

template <typename Tag, size_t kCellSize>
__attribute__((tls_model("initial-exec"))) thread_local CellCache
    CellPool<Tag, kCellSize>::cache_{};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_CELL_POOL_H_
