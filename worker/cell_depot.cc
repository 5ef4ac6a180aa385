// worker/cell_depot.cc

#include "tickwheel/worker/cell_depot.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "tickwheel/base/clock.h"
#include "tickwheel/base/fork_guard.h"

namespace tickwheel::internal {

// In the child, only the thread that forked exists: chunks that other
// threads were mapping will never arrive, so nobody may wait for them.
void CellDepot::ForgetMappersInChild(void* depot)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<CellDepot*>(depot)->mappers_ = 0;
}

CellDepot::CellDepot(size_t cell_size) : layout_(cell_size) {
  // Depots live as long as the process (see the header).
  HoldAcrossFork(&mu_, &CellDepot::ForgetMappersInChild, this);
}

// --- Taking cells --------------------------------------------------------

FreeCell* CellDepot::Take(uint32_t max, uint32_t* count) {
  while (true) {
    bool map = false;
    char* base = nullptr;  // a released chunk to fault in again, if any
    {
      MutexLock lock(&mu_, MutexLock::kSpinFirst);
      if (FreeCell* head = TakeLocked(max, count)) return head;
      if (mappers_ < kMaxMappers) {
        ++mappers_;
        map = true;
        base = TakeReleasedLocked();
      }
    }
    if (!map) {
      // kMaxMappers chunks are on their way: wait for one rather than map
      // more, which would stay in reserve. Polling, since a condition
      // variable's own lock could be inherited locked by fork().
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      continue;
    }
    // Every chunk is full and the reserve is empty: the worker has not kept
    // up (or there is none). Map and fault one in here, outside the mutex,
    // so that other threads can still take and give back cells meanwhile.
    // Two producers that run out together each fault one in, in parallel;
    // a spare one stays in reserve.
    if (!PrepareIntoReserve(base)) return nullptr;  // out of memory
  }
}

FreeCell* CellDepot::TakeLocked(uint32_t max, uint32_t* count) {
  FreeCell* head = nullptr;
  FreeCell** tail = &head;
  uint32_t n = 0;
  while (n < max) {
    while (first_with_free_ < chunks_.size() &&
           (chunks_[first_with_free_] == nullptr ||
            chunks_[first_with_free_]->free == 0)) {
      ++first_with_free_;
    }
    if (first_with_free_ == chunks_.size()) {
      // Partial, or nothing reserved.
      if (n > 0 || AddChunkLocked() == nullptr) break;
      continue;
    }
    ChunkHeader* h = chunks_[first_with_free_];
    if (h->free == layout_.cells_per_chunk) --empty_chunks_;  // spare no more
    n += h->TakeCells(layout_, max - n, tail);
  }
  *tail = nullptr;
  free_cells_ -= n;
  *count = n;
  // Out of chunks: Take() maps one now, so the reserve is not asked for.
  if (n == 0) return nullptr;
  NoteShortfallLocked();
  return head;
}

void CellDepot::NoteShortfallLocked() {
  // Stored only on a change, so that the flag's line stays shared in the
  // producers' caches; the clock is read only when the ready cells are
  // below the largest target there could be.
  if (want_reserve_.load(std::memory_order_relaxed)) return;
  const size_t ready = ReadyCellsLocked();
  const size_t per_chunk = layout_.cells_per_chunk;
  if (reserve_policy_.MayBeShort(ready, per_chunk) &&
      reserve_policy_.IsShort(ready, per_chunk, MonotonicNanos(),
                              InUseChunksLocked())) {
    want_reserve_.store(true, std::memory_order_relaxed);
  }
}

ChunkHeader* CellDepot::AddChunkLocked() {
  if (reserve_.empty()) return nullptr;
  // The oldest first: the others have been unused for less long, so decay
  // reaches them later.
  auto* h = reinterpret_cast<ChunkHeader*>(reserve_.front());
  reserve_.erase(reserve_.begin());
  // The lowest hole, so that memory in use stays dense; else at the end.
  size_t index = chunks_.size();
  if (holes_ > 0) {
    index = static_cast<size_t>(
        std::find(chunks_.begin(), chunks_.end(), nullptr) - chunks_.begin());
    chunks_[index] = h;
    --holes_;
  } else {
    chunks_.push_back(h);
  }
  h->Format(layout_, static_cast<uint32_t>(index));
  free_cells_ += layout_.cells_per_chunk;
  ++empty_chunks_;  // spare until TakeLocked() takes from it
  if (index < first_with_free_) first_with_free_ = index;
  reserve_policy_.NoteGrowth(MonotonicNanos());
  return h;
}

// --- Faulting chunks in ahead of need ------------------------------------

char* CellDepot::TakeReleasedLocked() {
  // Released address ranges first: no mmap, and memory stays dense.
  if (released_.empty()) return nullptr;
  char* base = released_.back();
  released_.pop_back();
  return base;
}

bool CellDepot::PrepareIntoReserve(char* base) {
  char* ready = nullptr;
  if (base == nullptr) {
    ready = MapFaultedChunk();
  } else if (FaultIn(base)) {
    ready = base;
  }
  bool wake = false;
  {
    MutexLock lock(&mu_);
    --mappers_;
    if (ready != nullptr) {
      if (base == nullptr) ++mapped_chunks_;
      const int64_t now = MonotonicNanos();
      reinterpret_cast<ChunkHeader*>(ready)->spare_since = now;
      reserve_.push_back(ready);
      wake = NoteSpareLocked(now);
    } else if (base != nullptr) {
      released_.push_back(base);
    }
  }
  if (wake) CallWaker();
  return ready != nullptr;
}

bool CellDepot::Replenish() {
  // One caller at a time does the work; a request that comes meanwhile sets
  // the flag again and is served by the next call.
  if (!want_reserve_.load(std::memory_order_relaxed) ||
      !want_reserve_.exchange(false, std::memory_order_relaxed)) {
    return false;
  }
  for (size_t faulted = 0;; ++faulted) {
    char* base = nullptr;
    {
      MutexLock lock(&mu_);
      // Chunks on their way from Take() count as ready: they go into the
      // reserve, or into use in place of one from it.
      const size_t per_chunk = layout_.cells_per_chunk;
      const size_t ready =
          ReadyCellsLocked() + static_cast<size_t>(mappers_) * per_chunk;
      const size_t target =
          reserve_policy_.TargetChunks(MonotonicNanos(), InUseChunksLocked()) *
          per_chunk;
      switch (ReservePolicy::NextReplenishStep(
          ready, target, mappers_ >= kMaxMappers, faulted)) {
        case ReservePolicy::Step::kEnough:
          return false;
        case ReservePolicy::Step::kAskAgain:
          // The caller's other work (filing, expiring) waits for this call:
          // ask again, so that the next call goes on.
          want_reserve_.store(true, std::memory_order_relaxed);
          return true;
        case ReservePolicy::Step::kFaultOneIn:
          break;
      }
      ++mappers_;
      base = TakeReleasedLocked();
    }
    // Out of memory: Take() will say so.
    if (!PrepareIntoReserve(base)) return false;
  }
}

size_t CellDepot::ReserveTargetChunks() const {
  MutexLock lock(&mu_);
  return reserve_policy_.TargetChunks(MonotonicNanos(), InUseChunksLocked());
}

// --- Giving cells back ---------------------------------------------------

void CellDepot::Give(FreeCell* head) {
  bool wake = false;
  {
    MutexLock lock(&mu_, MutexLock::kSpinFirst);
    // Per cell, only its bit is set here; the chunk's counters, cursor and
    // the depot's totals are settled once per run of cells from the same
    // chunk (Settle). A thread's cells mostly come back in runs (a burst
    // expires in allocation order; a refill hands out cells of one chunk),
    // so most cells cost one bit.
    ChunkHeader* h = nullptr;
    uint32_t given = 0;   // cells of `h` in this run
    uint32_t lowest = 0;  // the lowest bitmap word they set a bit in
    int64_t now = 0;      // read once, when a chunk first empties
    // Locals: the bitmap stores could alias the members, which the compiler
    // would then reload for every cell.
    const CellDivider divide = layout_.divide;
    const size_t first_cell = layout_.first_cell_offset;
    for (FreeCell* cell = head; cell != nullptr;) {
      FreeCell* next = cell->next;
      ChunkHeader* owner = ChunkHeader::Of(cell);
      if (owner != h) {
        if (h != nullptr) wake |= Settle(h, given, lowest, &now);
        h = owner;
        given = 0;
        lowest = UINT32_MAX;
      }
      lowest = std::min(lowest, h->MarkFree(cell, divide, first_cell));
      ++given;
      cell = next;
    }
    if (h != nullptr) wake |= Settle(h, given, lowest, &now);
  }
  if (wake) CallWaker();
}

bool CellDepot::Settle(ChunkHeader* h, uint32_t given, uint32_t lowest,
                       int64_t* now) {
  h->free += given;
  if (lowest < h->cursor) h->cursor = lowest;
  if (h->index < first_with_free_) first_with_free_ = h->index;
  free_cells_ += given;
  // `free` only grows within a Give(), so a chunk that filled up during the
  // run is full at its end.
  if (h->free != layout_.cells_per_chunk) return false;
  if (*now == 0) *now = MonotonicNanos();
  h->spare_since = *now;
  ++empty_chunks_;
  return NoteSpareLocked(*now);
}

bool CellDepot::NoteSpareLocked(int64_t now) {
  if (!DecayPolicy::StartsADecay(SpareChunksLocked(),
                                 next_decay_.load(std::memory_order_relaxed))) {
    return false;
  }
  next_decay_.store(DecayPolicy::DueAt(now), std::memory_order_seq_cst);
  return true;
}

// --- Giving memory back to the kernel ------------------------------------

void CellDepot::MaybeDecay() {
  if (next_decay_.load(std::memory_order_relaxed) == DecayPolicy::kNothingDue) {
    return;
  }
  Decay(MonotonicNanos());
}

void CellDepot::Decay(int64_t now_nanos) {
  if (!DecayPolicy::IsDue(next_decay_.load(std::memory_order_relaxed),
                          now_nanos)) {
    return;
  }
  DecayUntil(DecayPolicy::DueBy(now_nanos), now_nanos);
}

void CellDepot::DecayUntil(int64_t due_by, int64_t now_nanos) {
  std::vector<char*> going;
  {
    MutexLock lock(&mu_);
    going = TakeOutForReleaseLocked(due_by);
  }
  if (!going.empty()) FinishRelease(going, now_nanos);
}

std::vector<char*> CellDepot::TakeOutForReleaseLocked(int64_t due_by) {
  std::vector<SpareChunk> spare;
  for (char* base : reserve_) {
    spare.push_back({base, reinterpret_cast<ChunkHeader*>(base)->spare_since});
  }
  for (ChunkHeader* h : chunks_) {
    if (h != nullptr && h->free == layout_.cells_per_chunk) {
      spare.push_back({h->base(), h->spare_since});
    }
  }
  DecayPolicy::Decision decision =
      DecayPolicy::Decide(std::move(spare), due_by);
  for (char* base : decision.release) {
    if (auto it = std::find(reserve_.begin(), reserve_.end(), base);
        it != reserve_.end()) {
      reserve_.erase(it);
    } else {
      auto* h = reinterpret_cast<ChunkHeader*>(base);
      chunks_[h->index] = nullptr;
      ++holes_;
      --empty_chunks_;
      free_cells_ -= layout_.cells_per_chunk;
    }
  }
  // Resident until their pages are given back.
  releasing_ += decision.release.size();
  // Trailing holes go, so that TakeLocked() does not walk them.
  while (!chunks_.empty() && chunks_.back() == nullptr) {
    chunks_.pop_back();
    --holes_;
  }
  if (first_with_free_ > chunks_.size()) first_with_free_ = chunks_.size();
  next_decay_.store(decision.next, std::memory_order_seq_cst);
  return std::move(decision.release);
}

void CellDepot::FinishRelease(const std::vector<char*>& going,
                              int64_t now_nanos) {
  // Outside the mutex: nobody else can reach these chunks now. Free cells
  // hold nothing (their links live in thread caches, never in the depot),
  // and the header is formatted again when the chunk goes back into use,
  // so zero pages on the next touch are as good.
  std::vector<char*> kept;
  for (char* base : going) {
    if (!ReleasePages(base)) kept.push_back(base);
  }
  MutexLock lock(&mu_);
  releasing_ -= going.size();
  for (char* base : going) {
    if (std::find(kept.begin(), kept.end(), base) != kept.end()) {
      // Still resident: back into the reserve, unused as of now.
      reinterpret_cast<ChunkHeader*>(base)->spare_since = now_nanos;
      reserve_.push_back(base);
    } else {
      released_.push_back(base);
    }
  }
  if (!kept.empty() &&
      DecayPolicy::StartsADecay(SpareChunksLocked(),
                                next_decay_.load(std::memory_order_relaxed))) {
    next_decay_.store(DecayPolicy::DueAt(now_nanos), std::memory_order_seq_cst);
  }
}

// --- Wakers --------------------------------------------------------------

void CellDepot::AddWaker(void (*wake)(void*), void* arg) {
  wakers_.Add(wake, arg);
}

void CellDepot::RemoveWaker(void* arg) {
  wakers_.Remove(arg);
  // The worker that goes may have been the one to plan a pending decay.
  if (NextDecayNanos() != DecayPolicy::kNothingDue) CallWaker();
}

void CellDepot::CallWaker() {
  if (wakers_.WakeOne() != DecayWakers::Outcome::kOrphaned) return;
  // Every worker has gone: nobody will wake to decay later, so what is
  // spare goes back now, whatever its age.
  DecayUntil(DecayPolicy::kEverythingDue, MonotonicNanos());
}

// --- Counts --------------------------------------------------------------

size_t CellDepot::MappedBytes() const {
  MutexLock lock(&mu_);
  return mapped_chunks_ * kChunkBytes;
}

size_t CellDepot::ResidentChunks() const {
  MutexLock lock(&mu_);
  return chunks_.size() - holes_ + reserve_.size() + releasing_;
}

size_t CellDepot::ReserveChunks() const {
  MutexLock lock(&mu_);
  return reserve_.size();
}

size_t CellDepot::ReleasedChunks() const {
  MutexLock lock(&mu_);
  return released_.size();
}

size_t CellDepot::FreeCells() const {
  MutexLock lock(&mu_);
  return free_cells_;
}

}  // namespace tickwheel::internal
