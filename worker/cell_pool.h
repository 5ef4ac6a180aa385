// worker/cell_pool.h
// -----------------------------------------------------------------------------
// Internal. A process-wide pool of fixed-size memory cells with a cache per
// thread, for the one object a timer allocates per timeout (TimeoutNode).
//
// Why not malloc: a timeout is allocated by the thread that schedules it and
// freed by whichever thread drops the last reference, usually the worker
// after the task ran, or the canceller. glibc's free() of a 64-byte chunk
// from another thread is a third of the worker's time in a mass expiry. Here
// a cell is exactly kCellSize bytes, and both calls are usually an inline
// pop or push on a thread-local list.
//
// Why address order: timeouts die in deadline order, which is random in
// memory. A pool that hands freed cells back in the order they were freed
// (a plain free list) scatters every later newTimeout() over cold lines and
// pages, and a schedule that walks scattered memory costs several times one
// that walks fresh memory in order. So freed cells go back to a
// bitmap per chunk, and a thread refills its cache with the lowest free
// cells of the lowest chunk that has any, in ascending address order: after
// a mass expiry or stop(), new timeouts fill memory front to back again.
//
// Design
//   * Chunks of 2 MiB, 2 MiB-aligned (mmap, asking for transparent huge
//     pages: a worker that walks a million scattered cells misses the TLB
//     far less), never unmapped. A chunk begins with its header (index,
//     free count, scan cursor, one bit per cell: 1 = free), found from a
//     cell's address by masking; the cells follow.
//   * Each thread caches two lists per pool, threaded through each free
//     cell's first word: `recent`, the cells it freed itself (LIFO, so a
//     schedule-then-cancel loop reuses the cell still in cache), and
//     `refill`, up to kBatch cells taken from the depot in address order.
//     Allocate() pops `recent`, then `refill`; Free() pushes on `recent`.
//   * When `recent` reaches kBatch cells it goes back to the depot whole, one
//     mutex round trip per kBatch frees; an empty cache takes kBatch cells,
//     one round trip per kBatch allocations.
//   * The depot's mutex is held for about a microsecond (kBatch cells linked
//     or given back; a fresh chunk is faulted in before it is added, outside
//     the mutex; only a chunk whose pages went back to the kernel faults
//     its next 16 KiB in while cells are linked), so a thread that finds it
//     held spins briefly before it sleeps (Mutex::LockSpinning()):
//     two producers that refill at once would otherwise put each other to
//     sleep in the kernel, tens of microseconds each time.
//
// Ground rules
//   * Allocate() and Free() may be called from any thread. A cell may be
//     freed by another thread than the one that allocated it.
//   * Memory goes back to the pool. A chunk whose cells have all come back
//     is given back to the kernel (madvise MADV_DONTNEED on its cell pages;
//     the address range stays mapped) when at least kKeptFreeChunks chunks'
//     worth of other cells are free, so that a burst does not leave the
//     process at its peak and a steady load does not fault pages in and out.
//     Cells still cached by threads, and up to a few chunks' worth of free
//     cells, stay resident. The pool lives for the life of the process (it is
//     never destroyed, so cells may be freed during static destruction or by
//     detached threads).
//   * A thread's cached cells go back to the depot when the thread exits. A
//     cell freed after that, by a later thread_local destructor of the same
//     thread, goes straight to the depot.
//
// Memory ordering: a cell's contents pass between threads either through the
// owner's own synchronisation (the node's reference count, acq_rel) or
// through the depot's mutex. The thread caches are thread-local.
//
// Sanitizers: under AddressSanitizer TimeoutNode bypasses the pool (see
// worker/timeout_node.h), so ASan and LeakSanitizer track every node; this
// class is tested directly (tests/cell_pool_test.cc), also under TSan.
//
// Cost: Allocate() and Free() are inline list operations (a few ns). Per
// kBatch calls, one depot round trip: a refill scans the chunk's bitmap and
// links kBatch cells in address order, a return sets kBatch bits (a few ns
// per cell, under the mutex). Memory: kCellSize per cell plus one bit, and a
// header at the front of each chunk (0.2% for 64-byte cells); up to 2 *
// kBatch cached cells per thread.

#ifndef TICKWHEEL_TIMER_CELL_POOL_H_
#define TICKWHEEL_TIMER_CELL_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/worker/mutex.h"

namespace tickwheel::internal {

struct FreeCell {
  FreeCell* next;
};

// Divides an offset inside a chunk (below 2^21) by a fixed cell size with a
// multiply and a shift: a cell's index, in CellDepot::Give(), once per freed
// cell, where a 64-bit division would cost ~25-40 cycles. With
// shift = 21 + ceil(log2 d) and magic = ceil(2^shift / d), magic * d - 2^shift
// is below d <= 2^(shift - 21), so n * magic / 2^shift exceeds n / d by less
// than 1/d for n < 2^21; n / d is q + r/d with r <= d - 1, so the floor is
// still q (the round-up method of Granlund & Montgomery, 1994). magic is
// below 2^22, so the product stays below 2^43.
struct CellDivider {
  uint64_t magic;
  int shift;
  static constexpr CellDivider For(uint64_t d) {
    int log2_up = 0;
    while ((uint64_t{1} << log2_up) < d) ++log2_up;
    const int shift = 21 + log2_up;
    return {((uint64_t{1} << shift) + d - 1) / d, shift};
  }
  constexpr uint64_t operator()(uint64_t n) const { return n * magic >> shift; }
};

// The shared part of one pool: every chunk, with a bitmap of its free cells.
// This class is thread-safe.
class CellDepot {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  // Holds the depot's mutex across fork() (worker/fork_guard.h), so that a
  // child never inherits it locked by a thread that does not exist there.
  explicit CellDepot(size_t cell_size);
  CellDepot(const CellDepot&) = delete;
  CellDepot& operator=(const CellDepot&) = delete;

  // Up to `max` free cells, linked in ascending address order, from the
  // lowest chunk that has free cells (taking a chunk from the reserve if
  // none has, or else mapping and faulting one in outside the mutex, so that
  // other threads are not held up by the page faults; at most kMaxMappers
  // threads map at once, the others wait for their chunks); sets *count.
  // Returns nullptr (count 0) only when no memory is left.
  FreeCell* Take(uint32_t max, uint32_t* count) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes back a null-terminated list of cells.
  void Give(FreeCell* head) ABSL_LOCKS_EXCLUDED(mu_);

  // Maps and faults in a chunk ahead of need if Take() has asked for one
  // (fewer than a quarter of a chunk's cells left free, fewer than
  // kReserveChunks in reserve), so that the page faults of fresh memory
  // (zeroing 2 MiB; on a VM possibly the host backing it) hit the caller of
  // Replenish() instead of a thread in newTimeout(). A relaxed load when
  // nothing is asked; otherwise an mmap and one write per 4 KiB, outside the
  // mutex. The timer's worker calls it once per pass.
  void Replenish() ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kReserveChunks = 1;

  // For tests and metrics: bytes mapped, reserve included (chunks are never
  // unmapped), cells
  // per chunk, and free cells in the depot (not counting thread caches).
  size_t MappedBytes() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t CellsPerChunk() const { return cells_per_chunk_; }
  size_t FreeCells() const ABSL_LOCKS_EXCLUDED(mu_);
  // Chunks whose cell pages have been given back to the kernel (all their
  // cells free, with at least kKeptFreeChunks chunks' worth free elsewhere).
  size_t ReleasedChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kKeptFreeChunks = 2;

 private:
  struct ChunkHeader;
  // HoldAcrossFork()'s repair in a child: no thread maps a chunk there.
  static void ForgetMappersInChild(void* depot);
  // Take() with the mutex held: nullptr (count 0) when every chunk is full
  // and the reserve is empty, for Take() to map a chunk outside the mutex.
  FreeCell* TakeLocked(uint32_t max, uint32_t* count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For a caller that has counted itself in mappers_: maps and faults a
  // chunk in outside the mutex, then adds it to the reserve and uncounts
  // itself. False when out of memory.
  bool MapIntoReserve() ABSL_LOCKS_EXCLUDED(mu_);
  // Puts a chunk from the reserve into use; nullptr if the reserve is empty.
  ChunkHeader* AddChunk() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChunkHeader* HeaderOf(const void* cell) const;
  // Books `given` cells just returned to `h`, the lowest in bitmap word
  // `lowest`: its free count and scan cursor, the depot's totals, and the
  // release of a chunk that is now wholly free.
  void Settle(ChunkHeader* h, uint32_t given, uint32_t lowest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives a wholly free chunk's cell pages back to the kernel (madvise
  // MADV_DONTNEED) when enough other cells are free.
  void ReleaseIfSpare(ChunkHeader* h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t cell_size_;
  const CellDivider divide_;  // by cell_size_
  size_t first_cell_offset_ = 0;  // the header, rounded up to a cell
  size_t cells_per_chunk_ = 0;
  mutable Mutex mu_;
  std::vector<ChunkHeader*> chunks_ ABSL_GUARDED_BY(mu_);
  // No chunk before this index has a free cell.
  size_t first_with_free_ ABSL_GUARDED_BY(mu_) = 0;
  size_t free_cells_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<char*> reserve_ ABSL_GUARDED_BY(mu_);  // faulted in, unused
  // Threads mapping a chunk outside the mutex (Take(), Replenish()); Take()
  // waits rather than map one more beyond kMaxMappers, so that a crowd of
  // threads that find the depot empty at once does not leave a chunk each
  // in reserve.
  int mappers_ ABSL_GUARDED_BY(mu_) = 0;
  static constexpr int kMaxMappers = 2;
  std::atomic<bool> want_reserve_{false};  // set by Take(), cleared by Replenish()
};

// One thread's cache of one pool. Trivial, so that a thread_local instance
// needs no guard and is still readable while the thread exits.
struct CellCache {
  FreeCell* recent;  // freed by this thread, newest first
  FreeCell* refill;  // from the depot, ascending addresses
  uint32_t recent_count;
  bool registered;   // a flusher gives the cells back at thread exit
  bool exited;       // flushed at thread exit: bypass the cache
};

// Slow paths of CellPool, out of line.
void* CellAllocateSlow(CellCache& cache, CellDepot& depot, uint32_t batch);
void CellFreeSlow(CellCache& cache, CellDepot& depot, FreeCell* cell,
                  uint32_t batch);

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
    if (FreeCell* cell = c.recent) {
      c.recent = cell->next;
      --c.recent_count;
      return cell;
    }
    if (FreeCell* cell = c.refill) {
      c.refill = cell->next;
      return cell;
    }
    return CellAllocateSlow(c, Depot(), kBatch);
  }

  // Returns a cell obtained from Allocate(), from any thread.
  static void Free(void* p) {
    CellCache& c = cache_;
    auto* cell = static_cast<FreeCell*>(p);
    if (c.recent_count < kBatch && c.registered) {
      cell->next = c.recent;
      c.recent = cell;
      ++c.recent_count;
      return;
    }
    CellFreeSlow(c, Depot(), cell, kBatch);
  }

  static CellDepot& Depot() {
    // Never destroyed: cells may be freed during static destruction.
    static CellDepot* depot = new CellDepot(kCellSize);
    return *depot;
  }

 private:
  // initial-exec: one %fs-relative access even when linked into a shared
  // library (the model glibc's and tcmalloc's caches use); 24 bytes.
  __attribute__((tls_model("initial-exec"))) static thread_local CellCache
      cache_;
};

template <typename Tag, size_t kCellSize>
__attribute__((tls_model("initial-exec"))) thread_local CellCache
    CellPool<Tag, kCellSize>::cache_{};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_CELL_POOL_H_
