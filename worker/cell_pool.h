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
//     or given back; page faults, mmap and madvise all happen outside it),
//     so a thread that finds it held spins briefly before it sleeps
//     (Mutex::LockSpinning()): two producers that refill at once would
//     otherwise put each other to sleep in the kernel, tens of microseconds
//     each time.
//
// Fresh memory is faulted in ahead of need, off the producers' threads
//   The first touch of a page is a page fault (zeroing it; on a VM perhaps
//   also the host backing it), several microseconds per 4 KiB. So that it
//   does not land in newTimeout(), the depot keeps a reserve of chunks whose
//   pages are already faulted in (madvise MADV_POPULATE_WRITE, or one write
//   per page on kernels without it), and a chunk goes into use only from
//   there. The watermark: cells ready to hand out (free cells of chunks in
//   use plus the reserve's) below ReserveTargetChunks() chunks, a target
//   that grows with the chunks put into use while growth lasts (a second
//   chunk from the second one on, then one more per kGrowthPerReserveChunk,
//   at most kMaxReserveChunks; back to one after kDecayNanos without
//   growth): the longer a burst grows, the further ahead the worker stays,
//   so that a worker that runs late now and then still keeps up, while a
//   small or steady load keeps one chunk ready. Take() notes the shortfall
//   (ReserveWanted(), a flag on its own cache line that newTimeout() reads
//   to wake a sleeping worker) and the timer's worker fills the reserve in
//   Replenish() on its next pass. A producer that finds the reserve empty
//   never waits for the worker: it maps and faults a chunk in itself,
//   outside the mutex (the slow path).
//
// Freed memory decays back to the kernel
//   A chunk whose cells have all come back stays resident, ready for the
//   next burst, until it has gone unused for kDecayNanos; then Decay(),
//   which the timer's worker runs on its passes, gives its pages back
//   (madvise MADV_DONTNEED; the address range stays mapped and is faulted
//   in again by Replenish() when it is needed). Retention bound: besides the
//   cells in use and those cached by threads, at most kKeptFreeChunks wholly
//   free chunks (reserve included) stay resident indefinitely; every other
//   wholly free chunk is given back once it has been unused for kDecayNanos,
//   at the next Decay() after that (or with another chunk that is due, once
//   it has been unused for kDecayNanos - kDecaySlackNanos). A worker on the
//   real clock with nothing else to do wakes when the next of those is due
//   (NextDecayNanos()); each such wake-up gives at least one chunk back, and
//   once the pool is down to kKeptFreeChunks nothing is due and it wakes no
//   more. A chunk with one cell in use stays resident (cells do not move).
//
// Ground rules
//   * Allocate() and Free() may be called from any thread. A cell may be
//     freed by another thread than the one that allocated it.
//   * Memory goes back to the pool, and to the kernel as above. The pool
//     lives for the life of the process (it is never destroyed, so cells may
//     be freed during static destruction or by detached threads).
//   * A thread's cached cells go back to the depot when the thread exits. A
//     cell freed after that, by a later thread_local destructor of the same
//     thread, goes straight to the depot.
//
// Memory ordering: a cell's contents pass between threads either through the
// owner's own synchronisation (the node's reference count, acq_rel) or
// through the depot's mutex. The thread caches are thread-local. The two
// atomics outside the mutex are hints about work for the worker, each
// written under the mutex: `want_reserve_` (relaxed: a missed or stale
// reading only delays or repeats a Replenish(), which re-checks under the
// mutex) and `next_decay_` (seq_cst, see NextDecayNanos()).
//
// Sanitizers: under AddressSanitizer TimeoutNode bypasses the pool (see
// worker/timeout_node.h), so ASan and LeakSanitizer track every node; this
// class is tested directly (tests/cell_pool_test.cc), also under TSan.
//
// Cost: Allocate() and Free() are inline list operations (a few ns). Per
// kBatch calls, one depot round trip: a refill scans the chunk's bitmap and
// links kBatch cells in address order, a return sets kBatch bits (a few ns
// per cell, under the mutex). Replenish() and Decay() cost a relaxed load
// when there is nothing to do; otherwise an mmap or madvise per chunk
// (0.1-5 ms to fault 2 MiB in), on the worker's thread. Memory: kCellSize
// per cell plus one bit, and a header at the front of each chunk (0.2% for
// 64-byte cells); up to 2 * kBatch cached cells per thread; the reserve and
// the retained free chunks above.

#ifndef TICKWHEEL_TIMER_CELL_POOL_H_
#define TICKWHEEL_TIMER_CELL_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/base/time_source.h"

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
  // Wholly free chunks (reserve included) that stay resident however long
  // they go unused.
  static constexpr size_t kKeptFreeChunks = 2;
  // How long a wholly free chunk beyond kKeptFreeChunks stays resident
  // unused before Decay() gives it back; also the window over which growth
  // sets the reserve's target. A Decay() that is due also gives back the
  // chunks that would be due within kDecaySlackNanos, so that chunks that
  // went spare a little apart cost one wake-up, not one each.
  static constexpr int64_t kDecayNanos = 2'000'000'000;
  static constexpr int64_t kDecaySlackNanos = kDecayNanos / 4;
  // The reserve's target: one chunk, plus one once a second chunk has gone
  // into use in the current run of growth and one more per further
  // kGrowthPerReserveChunk, at most kMaxReserveChunks (GrowthTarget()).
  static constexpr size_t kGrowthPerReserveChunk = 4;
  static constexpr size_t kMaxReserveChunks = 16;

  // Holds the depot's mutex across fork() (base/fork_guard.h), so that a
  // child never inherits it locked by a thread that does not exist there.
  explicit CellDepot(size_t cell_size);
  CellDepot(const CellDepot&) = delete;
  CellDepot& operator=(const CellDepot&) = delete;

  // Up to `max` free cells, linked in ascending address order, from the
  // lowest chunk that has free cells (putting a chunk from the reserve into
  // use if none has, or else mapping and faulting one in outside the mutex,
  // so that other threads are not held up by the page faults; at most
  // kMaxMappers threads map at once, the others wait for their chunks); sets
  // *count. Notes a shortfall of the reserve for Replenish(). Returns nullptr
  // (count 0) only when no memory is left.
  FreeCell* Take(uint32_t max, uint32_t* count) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes back a null-terminated list of cells. A chunk that becomes wholly
  // free starts its decay period; if that puts more than kKeptFreeChunks
  // free and no decay was due yet, one registered waker is called (see
  // AddWaker()), after the mutex is released.
  void Give(FreeCell* head) ABSL_LOCKS_EXCLUDED(mu_);

  // True when a Take() found fewer cells ready than the reserve's target and
  // no Replenish() has run since. A relaxed load of a flag on its own cache
  // line (written once per shortfall, not per call): newTimeout() reads it to
  // wake a sleeping worker.
  bool ReserveWanted() const {
    return want_reserve_.load(std::memory_order_relaxed);
  }
  // If ReserveWanted(): faults chunks in until the cells ready reach the
  // target (released chunks first, then fresh mappings), each outside the
  // mutex, so that the page faults hit the caller instead of a thread in
  // newTimeout(). At most kChunksPerReplenish per call, so that a pass of
  // the worker is not held up for long; if that was not enough it asks
  // again (ReserveWanted()) and returns true, for the caller to call again
  // soon. A relaxed load when nothing is wanted. The timer's worker calls it
  // once per pass, and makes another pass at once after a true.
  bool Replenish() ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kChunksPerReplenish = 2;
  // The reserve's target in chunks of ready cells, from the growth of the
  // last kDecayNanos (see the file comment).
  size_t ReserveTargetChunks() const ABSL_LOCKS_EXCLUDED(mu_);

  // If `now_nanos` (a MonotonicNanos() reading: the pool is shared by every
  // timer, whatever their clocks) has reached NextDecayNanos(): gives back
  // to the kernel the wholly free chunks beyond kKeptFreeChunks that have
  // gone unused for kDecayNanos by now_nanos + kDecaySlackNanos, highest
  // addresses first; madvise outside the mutex. A relaxed load when nothing
  // is due.
  void Decay(int64_t now_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // Decay(MonotonicNanos()) if anything may be due; one relaxed load if not.
  void MaybeDecay() ABSL_LOCKS_EXCLUDED(mu_);
  // When the next Decay() will have something to give back (a
  // MonotonicNanos() reading), or INT64_MAX when at most kKeptFreeChunks are
  // free. seq_cst: a worker that stores its sleep plan (seq_cst) and then
  // reads this either sees a decay that Give() made due, or Give(), which
  // stores it before it calls the waker, sees the plan and wakes it.
  int64_t NextDecayNanos() const {
    return next_decay_.load(std::memory_order_seq_cst);
  }

  // Registers `wake(arg)`, called from whatever thread makes a decay due
  // while none was (a Give(), a Replenish()), with no depot mutex held, so
  // that a sleeping worker wakes for it; only the first registration is
  // called. RemoveWaker(arg) returns once no call to it is in progress, and
  // hands a pending decay to the next registration. Thread-safe; for the
  // life of `arg`.
  //
  //
  // Once the last registration is gone (every timer worker on the real
  // clock has stopped), no thread is left to wake later: the thread that
  // removes it while a decay is pending, and then any thread whose Give()
  // makes one due, gives back at once every wholly free chunk beyond
  // kKeptFreeChunks, whatever its age, until a registration comes again.
  // So memory held by the timeouts a stop() returned leaves when the caller
  // drops them, as it would have after cancel() with the worker running. A
  // depot that never had a registration keeps its chunks for Decay().
  void AddWaker(void (*wake)(void*), void* arg);
  void RemoveWaker(void* arg);

  // For tests and metrics: bytes mapped (chunks are never unmapped),
  // chunks resident (in use, in reserve, or on their way back to the
  // kernel), chunks in reserve, chunks whose pages were given back, cells
  // per chunk, and free cells in resident chunks (not counting thread
  // caches).
  size_t MappedBytes() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ResidentChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ReserveChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ReleasedChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t CellsPerChunk() const { return cells_per_chunk_; }
  size_t FreeCells() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct ChunkHeader;
  // HoldAcrossFork()'s repair in a child: no thread maps a chunk there.
  static void ForgetMappersInChild(void* depot);
  // Take() with the mutex held: nullptr (count 0) when every chunk is full
  // and the reserve is empty, for Take() to map a chunk outside the mutex.
  FreeCell* TakeLocked(uint32_t max, uint32_t* count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For a caller that has counted itself in mappers_: faults `base` (a
  // released chunk) or a fresh mapping in outside the mutex, then adds it to
  // the reserve and uncounts itself. False when out of memory.
  bool PrepareIntoReserve(char* base) ABSL_LOCKS_EXCLUDED(mu_);
  // Puts a chunk from the reserve into use; nullptr if the reserve is empty.
  ChunkHeader* AddChunk() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChunkHeader* HeaderOf(const void* cell) const;
  // Books `given` cells just returned to `h`, the lowest in bitmap word
  // `lowest`: its free count and scan cursor, the depot's totals, and the
  // decay of a chunk that is now wholly free. True when a waker must be
  // called.
  bool Settle(ChunkHeader* h, uint32_t given, uint32_t lowest, int64_t* now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t TargetLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The target after `grown` chunks put into use in a run of growth.
  static size_t GrowthTarget(size_t grown);
  size_t SpareChunksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return empty_chunks_ + reserve_.size();
  }
  // A chunk became spare at `now`: sets next_decay_ if this is the first
  // decay due; true when a waker must hear of it.
  bool NoteSpareLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls the first registered waker; with none left, gives back every
  // spare chunk beyond the floor now (see AddWaker()).
  void CallWaker() ABSL_LOCKS_EXCLUDED(mu_);
  // Decay() of every spare chunk unused since `due_by` - kDecayNanos, with
  // `now_nanos` the clock reading that stands for "now".
  void DecayUntil(int64_t due_by, int64_t now_nanos) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t cell_size_;
  const CellDivider divide_;      // by cell_size_
  size_t first_cell_offset_ = 0;  // the header, rounded up to a cell
  size_t cells_per_chunk_ = 0;
  mutable Mutex mu_;
  // Chunks in use, by index; nullptr where a chunk was given back (a hole,
  // filled first by the next chunk put into use).
  std::vector<ChunkHeader*> chunks_ ABSL_GUARDED_BY(mu_);
  size_t holes_ ABSL_GUARDED_BY(mu_) = 0;
  // No chunk before this index has a free cell.
  size_t first_with_free_ ABSL_GUARDED_BY(mu_) = 0;
  size_t free_cells_ ABSL_GUARDED_BY(mu_) = 0;
  // Chunks in use whose cells are all free.
  size_t empty_chunks_ ABSL_GUARDED_BY(mu_) = 0;
  // Faulted in, not in use, oldest first.
  std::vector<char*> reserve_ ABSL_GUARDED_BY(mu_);
  // Pages given back to the kernel, address range still mapped.
  std::vector<char*> released_ ABSL_GUARDED_BY(mu_);
  // Chunks a Decay() took out of use and is giving back outside the mutex:
  // still resident until it has.
  size_t releasing_ ABSL_GUARDED_BY(mu_) = 0;
  size_t mapped_chunks_ ABSL_GUARDED_BY(mu_) = 0;
  // Chunks put into use in the current run of growth, and when the last one
  // was; the count starts again after kDecayNanos without growth.
  size_t grown_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_growth_ ABSL_GUARDED_BY(mu_) = 0;
  // Threads mapping a chunk outside the mutex (Take(), Replenish()); Take()
  // waits rather than map one more beyond kMaxMappers, so that a crowd of
  // threads that find the depot empty at once does not leave a chunk each
  // in reserve.
  int mappers_ ABSL_GUARDED_BY(mu_) = 0;
  static constexpr int kMaxMappers = 2;
  // Set by Take() (under mu_), cleared by Replenish(). Its own cache line:
  // newTimeout() reads it, and the mutex's line changes on every refill.
  alignas(64) std::atomic<bool> want_reserve_{false};
  // The last registration has gone and none has come since (AddWaker()).
  // Written under the waker table's mutex, read by CallWaker() under it.
  bool orphaned_ = false;
  // See NextDecayNanos(). Stored under mu_ (so that it agrees with the
  // chunks it describes); loaded without it.
  alignas(64) std::atomic<int64_t> next_decay_{INT64_MAX};
};

// One thread's cache of one pool. Trivial, so that a thread_local instance
// needs no guard and is still readable while the thread exits.
struct CellCache {
  FreeCell* recent;  // freed by this thread, newest first
  FreeCell* refill;  // from the depot, ascending addresses
  uint32_t recent_count;
  bool registered;  // a flusher gives the cells back at thread exit
  bool exited;      // flushed at thread exit: bypass the cache
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
  __attribute__((
      tls_model("initial-exec"))) static thread_local CellCache cache_;
};

template <typename Tag, size_t kCellSize>
__attribute__((tls_model(
    "initial-exec"))) thread_local CellCache CellPool<Tag, kCellSize>::cache_{};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_CELL_POOL_H_
