// worker/cell_depot.h
// -----------------------------------------------------------------------------
// Internal. CellDepot: the shared part of one cell pool (worker/cell_pool.h),
// where threads' caches take cells in batches and give them back. It keeps
// every chunk (worker/chunk.h) in one of four places:
//
//   in use     in chunks_, by index, with a bitmap of its free cells; a slot
//              whose chunk was given back is a hole, filled first
//   reserve    faulted in, not yet in use, oldest first
//   releasing  out of the tables while a decay gives its pages back
//   released   pages given back, address range still mapped
//
// and applies its policy (worker/chunk_policy.h): a chunk goes into use from
// the reserve, which the timer's worker fills ahead of need (Replenish()),
// and a spare chunk goes back to the kernel once it has gone unused for long
// enough (Decay()), with a waker telling a sleeping worker when that is due
// (worker/decay_wakers.h). Chunks are never unmapped.
//
// Address order: Take() hands out the lowest free cells of the lowest chunk
// that has any, linked in ascending order, so that after a mass expiry new
// cells fill memory front to back instead of scattering over cold lines.
//
// Ground rules
//   * One mutex, mu_, guards the tables, the bitmaps of the chunks in use,
//     and the policy's state: the policy's decisions read the tables' counts
//     and must agree with them, and a refill that puts a chunk into use also
//     moves the run of growth, so both change in one critical section.
//   * mu_ is held only while cells are linked or bits set (no system call,
//     no page fault: the kernel calls of worker/chunk.h run outside it), so
//     Take() and Give() spin briefly before they sleep on it
//     (Mutex::LockSpinning()): two producers that refill at once would
//     otherwise put each other to sleep in the kernel.
//   * A chunk taken out of the tables (to map it, fault it in or release
//     its pages outside mu_) is reachable by its taker only, until it puts
//     it back under mu_.
//   * mu_ is held across fork() (base/fork_guard.h): a child never inherits
//     it locked by a thread that does not exist there.
//   * Two atomics tell the worker about work without mu_: want_reserve_
//     (ReserveWanted()) and next_decay_ (NextDecayNanos()). Each says at
//     its declaration who writes it and why its memory order is enough.
//
// A depot lives for the life of the process (cells may be freed during
// static destruction, or by detached threads). This class is thread-safe.

#ifndef TICKWHEEL_WORKER_CELL_DEPOT_H_
#define TICKWHEEL_WORKER_CELL_DEPOT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/worker/chunk.h"
#include "tickwheel/worker/chunk_policy.h"
#include "tickwheel/worker/decay_wakers.h"

namespace tickwheel::internal {

class CellDepot {
 public:
  // A depot of cells of `cell_size` bytes, a multiple of 16.
  explicit CellDepot(size_t cell_size);
  CellDepot(const CellDepot&) = delete;
  CellDepot& operator=(const CellDepot&) = delete;

  // Up to `max` free cells, linked in ascending address order, from the
  // lowest chunk that has free cells; sets *count. If no chunk has any, puts
  // one from the reserve into use, or else maps and faults one in itself,
  // outside the mutex; at most kMaxMappers threads map at once, the others
  // wait for their chunks. Notes a shortfall of the reserve for Replenish().
  // Returns nullptr (count 0) only when no memory is left.
  FreeCell* Take(uint32_t max, uint32_t* count) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes back a null-terminated list of cells; aborts on a cell that is
  // free already. A chunk that becomes wholly free starts its decay period;
  // if that makes the first decay due, one waker hears of it (AddWaker()),
  // after the mutex is released.
  void Give(FreeCell* head) ABSL_LOCKS_EXCLUDED(mu_);

  // True when a Take() found fewer cells ready than the reserve's target
  // and no Replenish() has run since. A relaxed load of a flag on its own
  // cache line, stored only when it changes: newTimeout() reads it to wake
  // a sleeping worker. Relaxed is enough: a missed or stale reading only
  // delays or repeats a Replenish(), which checks again under the mutex.
  bool ReserveWanted() const {
    return want_reserve_.load(std::memory_order_relaxed);
  }
  // If ReserveWanted(): faults chunks in until the ready cells reach the
  // target (released chunks first, then fresh mappings), each outside the
  // mutex, so that the page faults hit the caller instead of a thread in
  // newTimeout(). At most ReservePolicy::kChunksPerReplenish per call; if
  // that was not enough it asks again (ReserveWanted()) and returns true,
  // for the caller to call again soon. A relaxed load when nothing is
  // wanted. The timer's worker calls it once per pass.
  bool Replenish() ABSL_LOCKS_EXCLUDED(mu_);
  // The reserve's target now, in chunks of ready cells.
  size_t ReserveTargetChunks() const ABSL_LOCKS_EXCLUDED(mu_);

  // If `now_nanos` (a MonotonicNanos() reading) has reached
  // NextDecayNanos(): gives back to the kernel the spare chunks beyond the
  // floor that are due by DecayPolicy::DueBy(now_nanos), highest addresses
  // first, and plans the next decay; the pages go outside the mutex. A
  // relaxed load when nothing is due.
  void Decay(int64_t now_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // Decay(MonotonicNanos()) if anything may be due; one relaxed load if not.
  void MaybeDecay() ABSL_LOCKS_EXCLUDED(mu_);
  // When the next Decay() will have something to give back (a
  // MonotonicNanos() reading), or DecayPolicy::kNothingDue at the floor.
  // seq_cst: a worker that stores its sleep plan (seq_cst) and then reads
  // this either sees a decay that Give() made due, or that Give(), which
  // stores it before it calls the waker, sees the plan and wakes it.
  int64_t NextDecayNanos() const {
    return next_decay_.load(std::memory_order_seq_cst);
  }

  // Registers `wake(arg)`, called from whatever thread makes a decay due
  // while none was (a Give(), a Replenish()), with no depot mutex held, so
  // that a sleeping worker wakes for it; only the first registration is
  // called. RemoveWaker(arg) returns once no call to it is in progress, and
  // hands a pending decay to the next registration. For the life of `arg`.
  //
  // Once the last registration is gone (every timer worker on the real
  // clock has stopped), no thread is left to wake later: the thread that
  // removes it while a decay is pending, and then any thread whose Give()
  // makes one due, gives back at once every spare chunk beyond the floor,
  // whatever its age, until a registration comes again. So memory held by
  // the timeouts a stop() returned leaves when the caller drops them, as it
  // would have after cancel() with the worker running. A depot that never
  // had a registration keeps its chunks for Decay().
  void AddWaker(void (*wake)(void*), void* arg);
  void RemoveWaker(void* arg) ABSL_LOCKS_EXCLUDED(mu_);

  // For tests and metrics: bytes mapped (chunks are never unmapped), chunks
  // resident (in use, in reserve, or releasing), chunks in reserve, chunks
  // whose pages were given back, cells per chunk, and free cells in
  // resident chunks (not counting threads' caches).
  size_t MappedBytes() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ResidentChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ReserveChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t ReleasedChunks() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t CellsPerChunk() const { return layout_.cells_per_chunk; }
  size_t FreeCells() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Threads that may map a chunk at once (Take(), Replenish()). Take()
  // waits rather than map one more, so that a crowd of threads that find
  // the depot empty together does not leave a chunk each in reserve.
  static constexpr int kMaxMappers = 2;

  // HoldAcrossFork()'s repair in a child: no thread maps a chunk there.
  static void ForgetMappersInChild(void* depot);

  // Take() with the mutex held: nullptr (count 0) when every chunk is full
  // and the reserve is empty, for Take() to map a chunk outside the mutex.
  FreeCell* TakeLocked(uint32_t max, uint32_t* count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Raises ReserveWanted() if the ready cells are short of the target.
  void NoteShortfallLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts a chunk from the reserve into use; nullptr if the reserve is empty.
  ChunkHeader* AddChunkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A released chunk to fault in again, or nullptr for a fresh mapping.
  char* TakeReleasedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For a caller that has counted itself in mappers_: faults `base` (a
  // released chunk) or a fresh mapping in outside the mutex, then adds it
  // to the reserve and uncounts itself. False when out of memory.
  bool PrepareIntoReserve(char* base) ABSL_LOCKS_EXCLUDED(mu_);

  // Books `given` cells just returned to `h`, the lowest in bitmap word
  // `lowest`: its free count and cursor, the depot's totals, and the decay
  // of a chunk that is now wholly free (*now: a clock reading, taken once
  // per Give()). True when a waker must be called.
  bool Settle(ChunkHeader* h, uint32_t given, uint32_t lowest, int64_t* now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t SpareChunksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return empty_chunks_ + reserve_.size();
  }
  size_t InUseChunksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return chunks_.size() - holes_;
  }
  size_t ReadyCellsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return free_cells_ + reserve_.size() * layout_.cells_per_chunk;
  }
  // A chunk became spare at `now`: plans the first decay if this makes one
  // due; true when a waker must hear of it.
  bool NoteSpareLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls the first registered waker; with none left, gives back every
  // spare chunk beyond the floor now (see AddWaker()).
  void CallWaker() ABSL_LOCKS_EXCLUDED(mu_);
  // A decay with cutoff `due_by`, `now_nanos` standing for now.
  void DecayUntil(int64_t due_by, int64_t now_nanos) ABSL_LOCKS_EXCLUDED(mu_);
  // DecayUntil()'s part under the mutex: takes the chunks to release out of
  // the tables, counts them as releasing, plans the next decay.
  std::vector<char*> TakeOutForReleaseLocked(int64_t due_by)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts back the chunks a decay released: released, or into the reserve
  // as spare from `now_nanos` if the kernel kept their pages.
  void FinishRelease(const std::vector<char*>& going, int64_t now_nanos)
      ABSL_LOCKS_EXCLUDED(mu_);

  const ChunkLayout layout_;
  mutable Mutex mu_;
  std::vector<ChunkHeader*> chunks_ ABSL_GUARDED_BY(mu_);  // in use
  size_t holes_ ABSL_GUARDED_BY(mu_) = 0;  // nullptr entries in chunks_
  // No chunk before this index has a free cell.
  size_t first_with_free_ ABSL_GUARDED_BY(mu_) = 0;
  size_t free_cells_ ABSL_GUARDED_BY(mu_) = 0;  // in chunks in use
  // Chunks in use whose cells are all free.
  size_t empty_chunks_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<char*> reserve_ ABSL_GUARDED_BY(mu_);   // oldest first
  std::vector<char*> released_ ABSL_GUARDED_BY(mu_);  // pages given back
  size_t releasing_ ABSL_GUARDED_BY(mu_) = 0;
  size_t mapped_chunks_ ABSL_GUARDED_BY(mu_) = 0;
  int mappers_ ABSL_GUARDED_BY(mu_) = 0;  // at most kMaxMappers
  ReservePolicy reserve_policy_ ABSL_GUARDED_BY(mu_);
  DecayWakers wakers_;
  // Raised under mu_ by Take() and by a Replenish() that asks again;
  // cleared by Replenish()'s exchange, without mu_. Relaxed throughout: it
  // carries no data (whatever it asks for is checked and done under mu_),
  // and the exchange, a read-modify-write, gives each raise to one caller.
  // Its own cache line: newTimeout() reads it, and the mutex's line
  // changes on every refill.
  alignas(64) std::atomic<bool> want_reserve_{false};
  // Stored (seq_cst) under mu_ only: by Give() and PrepareIntoReserve()
  // when they make the first decay due, and by a decay, which plans the
  // next. Loaded seq_cst by the sleeping worker (NextDecayNanos()), and
  // relaxed elsewhere: under mu_, where the mutex orders it, or as a hint
  // in Decay() and MaybeDecay(), where a stale reading only moves the
  // decay to the worker's next pass (the store that made it due is
  // followed by a call to the waker).
  alignas(64) std::atomic<int64_t> next_decay_{DecayPolicy::kNothingDue};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_CELL_DEPOT_H_
