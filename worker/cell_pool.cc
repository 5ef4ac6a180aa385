// worker/cell_pool.cc

#include "tickwheel/worker/cell_pool.h"

#include <errno.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "tickwheel/base/fork_guard.h"

namespace tickwheel::internal {

// At the front of every chunk; the bitmap follows it, then the cells.
struct CellDepot::ChunkHeader {
  uint32_t index;   // in chunks_
  uint32_t free;    // cells whose bit is set
  uint32_t cursor;  // no free bit in any word before this one
  uint32_t words;   // bitmap words
  // When it last became spare (wholly free in use, or faulted into the
  // reserve): a MonotonicNanos() reading, for Decay().
  int64_t spare_since;
  uint64_t* bits() { return reinterpret_cast<uint64_t*>(this + 1); }
};

namespace {

constexpr size_t kChunk = CellDepot::kChunkBytes;
constexpr size_t kPage = 4096;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

// A kChunk-aligned, zeroed region of kChunk bytes, or nullptr. Aligned so
// that a cell's chunk is its address rounded down, and so that the kernel
// can back it with one transparent huge page.
char* MapAligned() {
  void* raw = mmap(nullptr, 2 * kChunk, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kChunk - 1) & ~uintptr_t{kChunk - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + 2 * kChunk;
  if (end > aligned + kChunk) {
    munmap(reinterpret_cast<void*>(aligned + kChunk), end - aligned - kChunk);
  }
  // Advice only: without THP the chunk is plain 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), kChunk, MADV_HUGEPAGE);
  return reinterpret_cast<char*>(aligned);
}

// Faults every page of the chunk at `base` in, writable, so that later
// writes take no fault. Slow (0.1-5 ms): never called with a depot's mutex
// held. False when out of memory.
bool FaultIn(char* base) {
  // One call for the whole chunk (one huge page when THP gives one). A
  // kernel without MADV_POPULATE_WRITE rejects it with EINVAL: then one
  // write per page, volatile so that it is not optimised away.
  if (madvise(base, kChunk, MADV_POPULATE_WRITE) == 0) return true;
  if (errno != EINVAL) return false;  // ENOMEM, or the mapping is gone
  for (size_t off = 0; off < kChunk; off += kPage) {
    static_cast<volatile char*>(static_cast<void*>(base))[off] = 0;
  }
  return true;
}

// A freshly mapped chunk with every page faulted in, or nullptr.
char* MapFaultedChunk() {
  char* base = MapAligned();
  if (base == nullptr) return nullptr;
  if (!FaultIn(base)) {
    munmap(base, kChunk);
    return nullptr;
  }
  return base;
}

[[noreturn]] void DoubleFree(const void* cell) {
  std::fprintf(stderr,
               "tickwheel: pool cell %p freed twice (a TimeoutNode reference "
               "count went wrong)\n",
               cell);
  std::abort();
}

// Who to wake when a decay becomes due: one process-wide table for every
// depot (registrations are rare: a worker thread's start and end), under a
// mutex held across fork() whose child has none of the registered threads.
struct Waker {
  const CellDepot* depot;
  void (*wake)(void*);
  void* arg;
};
struct WakerTable {
  Mutex mu;
  std::vector<Waker> wakers ABSL_GUARDED_BY(mu);
};
void ForgetWakersInChild(void* table) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<WakerTable*>(table)->wakers.clear();
}
WakerTable& Wakers() {
  // Never destroyed: depots are not either.
  static WakerTable* table = [] {
    auto* t = new WakerTable;
    HoldAcrossFork(&t->mu, &ForgetWakersInChild, t);
    return t;
  }();
  return *table;
}

}  // namespace

// In the child, only the thread that forked exists: chunks that other
// threads were mapping will never arrive, so nobody may wait for them.
void CellDepot::ForgetMappersInChild(void* depot)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<CellDepot*>(depot)->mappers_ = 0;
}

CellDepot::CellDepot(size_t cell_size)
    : cell_size_(cell_size), divide_(CellDivider::For(cell_size)) {
  const size_t max_cells = kChunk / cell_size;
  const size_t words = (max_cells + 63) / 64;
  const size_t header = sizeof(ChunkHeader) + words * sizeof(uint64_t);
  first_cell_offset_ = (header + cell_size - 1) / cell_size * cell_size;
  static_assert(sizeof(ChunkHeader) % alignof(uint64_t) == 0,
                "the bitmap follows the header");
  cells_per_chunk_ = (kChunk - first_cell_offset_) / cell_size;
  // Depots live as long as the process (see the header).
  HoldAcrossFork(&mu_, &CellDepot::ForgetMappersInChild, this);
}

CellDepot::ChunkHeader* CellDepot::HeaderOf(const void* cell) const {
  return reinterpret_cast<ChunkHeader*>(reinterpret_cast<uintptr_t>(cell) &
                                        ~uintptr_t{kChunk - 1});
}

CellDepot::ChunkHeader* CellDepot::AddChunk() {
  if (reserve_.empty()) return nullptr;
  // The oldest first: the others have been unused for less long, so decay
  // reaches them later.
  char* base = reserve_.front();
  reserve_.erase(reserve_.begin());
  auto* h = reinterpret_cast<ChunkHeader*>(base);
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
  h->index = static_cast<uint32_t>(index);
  h->free = static_cast<uint32_t>(cells_per_chunk_);
  h->cursor = 0;
  h->words = static_cast<uint32_t>((cells_per_chunk_ + 63) / 64);
  uint64_t* bits = h->bits();
  for (uint32_t w = 0; w < h->words; ++w) bits[w] = ~uint64_t{0};
  if (const size_t tail = cells_per_chunk_ % 64; tail != 0) {
    bits[h->words - 1] = (uint64_t{1} << tail) - 1;
  }
  free_cells_ += cells_per_chunk_;
  ++empty_chunks_;  // spare until TakeLocked() takes from it
  if (index < first_with_free_) first_with_free_ = index;
  // Growth: the reserve's target follows it (once per chunk, a clock read).
  const int64_t now = MonotonicNanos();
  if (now - last_growth_ > kDecayNanos) grown_ = 0;
  ++grown_;
  last_growth_ = now;
  return h;
}

size_t CellDepot::GrowthTarget(size_t grown) {
  // The first extra chunk once a second one has gone into use, then one
  // more per kGrowthPerReserveChunk.
  return std::min(
      1 + (grown + kGrowthPerReserveChunk - 2) / kGrowthPerReserveChunk,
      kMaxReserveChunks);
}

size_t CellDepot::TargetLocked() const {
  if (grown_ == 0 || MonotonicNanos() - last_growth_ > kDecayNanos) return 1;
  return GrowthTarget(grown_);
}

size_t CellDepot::ReserveTargetChunks() const {
  MutexLock lock(&mu_);
  return TargetLocked();
}

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
        if (!released_.empty()) {
          base = released_.back();
          released_.pop_back();
        }
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
    // up (or there is none). Map and fault one in here, outside the mutex:
    // that takes 0.1-5 ms, during which other threads must still be able to
    // take and give back cells. Up to kMaxMappers threads do this at once
    // (two producers that run out together each fault one in, in parallel);
    // a spare chunk stays in reserve.
    if (!PrepareIntoReserve(base)) return nullptr;  // out of memory
  }
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
      if (n > 0 || AddChunk() == nullptr) break;  // partial, or none reserved
      continue;
    }
    ChunkHeader* h = chunks_[first_with_free_];
    if (h->free == cells_per_chunk_) --empty_chunks_;  // spare no more
    uint64_t* bits = h->bits();
    char* cells = reinterpret_cast<char*>(h) + first_cell_offset_;
    const uint32_t before = n;
    uint32_t w = h->cursor;
    for (; w < h->words && n < max; ++w) {
      uint64_t word = bits[w];
      while (word != 0 && n < max) {
        const size_t i =
            size_t{w} * 64 + static_cast<size_t>(std::countr_zero(word));
        word &= word - 1;
        auto* cell = reinterpret_cast<FreeCell*>(cells + i * cell_size_);
        *tail = cell;
        tail = &cell->next;
        ++n;
      }
      bits[w] = word;
      if (word != 0) break;  // max reached inside this word
    }
    h->cursor = w;
    h->free -= n - before;
  }
  *tail = nullptr;
  free_cells_ -= n;
  *count = n;
  // Out of chunks: Take() maps one now, so the reserve is not asked for.
  if (n == 0) return nullptr;
  // The watermark (see the header). Stored only on a change, so that the
  // flag's line stays shared in the producers' caches. The target (a clock
  // read) only when the ready cells are below its largest possible value.
  const size_t ready = free_cells_ + reserve_.size() * cells_per_chunk_;
  if (!want_reserve_.load(std::memory_order_relaxed) &&
      ready < GrowthTarget(std::max<size_t>(grown_, 1)) * cells_per_chunk_ &&
      ready < TargetLocked() * cells_per_chunk_) {
    want_reserve_.store(true, std::memory_order_relaxed);
  }
  return head;
}

bool CellDepot::Replenish() {
  // One caller at a time does the work; a request that comes meanwhile sets
  // the flag again and is served by the next call.
  if (!want_reserve_.load(std::memory_order_relaxed) ||
      !want_reserve_.exchange(false, std::memory_order_relaxed)) {
    return false;
  }
  for (size_t i = 0;; ++i) {
    char* base = nullptr;
    {
      MutexLock lock(&mu_);
      // Chunks on their way from Take() count as ready: they go into the
      // reserve, or into use in place of one from it.
      const size_t ready =
          free_cells_ +
          (reserve_.size() + static_cast<size_t>(mappers_)) * cells_per_chunk_;
      if (ready >= TargetLocked() * cells_per_chunk_ ||
          mappers_ >= kMaxMappers) {
        return false;
      }
      if (i == kChunksPerReplenish) {
        // Enough for one call: the caller's other work (filing, expiring)
        // waits for this one. Ask again, so that the next call goes on.
        want_reserve_.store(true, std::memory_order_relaxed);
        return true;
      }
      ++mappers_;
      // Released address ranges first: no mmap, and memory stays dense.
      if (!released_.empty()) {
        base = released_.back();
        released_.pop_back();
      }
    }
    if (!PrepareIntoReserve(base))
      return false;  // out of memory: Take() says so
  }
}

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
    const CellDivider divide = divide_;
    const size_t first_cell = first_cell_offset_;
    for (FreeCell* cell = head; cell != nullptr;) {
      FreeCell* next = cell->next;
      ChunkHeader* owner = HeaderOf(cell);
      if (owner != h) {
        if (h != nullptr) wake |= Settle(h, given, lowest, &now);
        h = owner;
        given = 0;
        lowest = UINT32_MAX;
      }
      const auto offset =
          static_cast<size_t>(reinterpret_cast<char*>(cell) -
                              reinterpret_cast<char*>(h) - first_cell);
      const size_t i = divide(offset);
      const auto w = static_cast<uint32_t>(i / 64);
      const uint64_t bit = uint64_t{1} << (i % 64);
      uint64_t& word = h->bits()[w];
      if (word & bit) DoubleFree(cell);
      word |= bit;
      ++given;
      lowest = std::min(lowest, w);
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
  if (h->free != cells_per_chunk_) return false;
  if (*now == 0) *now = MonotonicNanos();
  h->spare_since = *now;
  ++empty_chunks_;
  return NoteSpareLocked(*now);
}

bool CellDepot::NoteSpareLocked(int64_t now) {
  if (SpareChunksLocked() <= kKeptFreeChunks) return false;
  // A decay already due comes no later than this one, and whoever made it
  // due has told a waker: Decay() then plans the rest.
  if (next_decay_.load(std::memory_order_relaxed) != INT64_MAX) return false;
  next_decay_.store(now + kDecayNanos, std::memory_order_seq_cst);
  return true;
}

void CellDepot::MaybeDecay() {
  if (next_decay_.load(std::memory_order_relaxed) == INT64_MAX) return;
  Decay(MonotonicNanos());
}

void CellDepot::Decay(int64_t now_nanos) {
  if (now_nanos < next_decay_.load(std::memory_order_relaxed)) return;
  // Spare chunks unused for the whole period, or due within the slack (so
  // that chunks that went spare a little apart, like a burst's reserve,
  // cost one wake-up, not one each).
  DecayUntil(now_nanos + kDecaySlackNanos, now_nanos);
}

void CellDepot::DecayUntil(int64_t due_by, int64_t now_nanos) {
  std::vector<char*> going;
  {
    MutexLock lock(&mu_);
    // Highest address first, so that the ones kept are those new cells are
    // taken from first.
    std::vector<char*> idle;
    for (char* base : reserve_) {
      if (reinterpret_cast<ChunkHeader*>(base)->spare_since + kDecayNanos <=
          due_by) {
        idle.push_back(base);
      }
    }
    for (ChunkHeader* h : chunks_) {
      if (h != nullptr && h->free == cells_per_chunk_ &&
          h->spare_since + kDecayNanos <= due_by) {
        idle.push_back(reinterpret_cast<char*>(h));
      }
    }
    std::sort(idle.begin(), idle.end(), std::greater<>());
    for (char* base : idle) {
      if (SpareChunksLocked() <= kKeptFreeChunks) break;
      if (auto it = std::find(reserve_.begin(), reserve_.end(), base);
          it != reserve_.end()) {
        reserve_.erase(it);
      } else {
        auto* h = reinterpret_cast<ChunkHeader*>(base);
        chunks_[h->index] = nullptr;
        ++holes_;
        --empty_chunks_;
        free_cells_ -= cells_per_chunk_;
      }
      going.push_back(base);
    }
    // Resident until their pages are given back below.
    releasing_ += going.size();
    // Trailing holes go, so that TakeLocked() does not walk them.
    while (!chunks_.empty() && chunks_.back() == nullptr) {
      chunks_.pop_back();
      --holes_;
    }
    if (first_with_free_ > chunks_.size()) first_with_free_ = chunks_.size();
    // The next decay: the earliest spare chunk's, if more than the floor
    // are left (every one left is due after due_by: all the idle ones went
    // while more than the floor were spare).
    int64_t next = INT64_MAX;
    if (SpareChunksLocked() > kKeptFreeChunks) {
      for (char* base : reserve_) {
        next =
            std::min(next, reinterpret_cast<ChunkHeader*>(base)->spare_since);
      }
      for (ChunkHeader* h : chunks_) {
        if (h != nullptr && h->free == cells_per_chunk_) {
          next = std::min(next, h->spare_since);
        }
      }
      next += kDecayNanos;
    }
    next_decay_.store(next, std::memory_order_seq_cst);
  }
  if (going.empty()) return;
  // Outside the mutex: nobody else can reach these chunks now. Free cells
  // hold nothing (their links live in thread caches, never in the depot),
  // and the header is written again when the chunk goes back into use, so
  // zero pages on the next touch are as good.
  std::vector<char*> kept;
  for (char* base : going) {
    if (madvise(base, kChunk, MADV_DONTNEED) != 0) kept.push_back(base);
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
  if (!kept.empty() && SpareChunksLocked() > kKeptFreeChunks &&
      next_decay_.load(std::memory_order_relaxed) == INT64_MAX) {
    next_decay_.store(now_nanos + kDecayNanos, std::memory_order_seq_cst);
  }
}

void CellDepot::AddWaker(void (*wake)(void*), void* arg) {
  WakerTable& table = Wakers();
  MutexLock lock(&table.mu);
  table.wakers.push_back({this, wake, arg});
  orphaned_ = false;
}

void CellDepot::RemoveWaker(void* arg) {
  {
    WakerTable& table = Wakers();
    MutexLock lock(&table.mu);
    auto& w = table.wakers;
    w.erase(std::remove_if(w.begin(), w.end(),
                           [&](const Waker& x) {
                             return x.depot == this && x.arg == arg;
                           }),
            w.end());
    orphaned_ = std::none_of(w.begin(), w.end(),
                             [&](const Waker& x) { return x.depot == this; });
  }
  // The worker that goes may have been the one to plan a pending decay.
  if (NextDecayNanos() != INT64_MAX) CallWaker();
}

void CellDepot::CallWaker() {
  {
    WakerTable& table = Wakers();
    MutexLock lock(&table.mu);
    for (const Waker& w : table.wakers) {
      if (w.depot == this) {
        w.wake(w.arg);
        return;
      }
    }
    if (!orphaned_) return;  // Decay() is the owner's to call
  }
  // Every worker has gone: nobody will wake to decay later, so what is
  // spare goes back now, whatever its age.
  DecayUntil(INT64_MAX - kDecayNanos, MonotonicNanos());
}

size_t CellDepot::MappedBytes() const {
  MutexLock lock(&mu_);
  return mapped_chunks_ * kChunk;
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

namespace {

// One per thread that used a pool; its destructor runs at thread exit and
// gives every cached cell back. A thread uses few pools: a small table.
class CacheFlusher {
 public:
  ~CacheFlusher() {
    for (int i = 0; i < used_; ++i) {
      CellCache& c = *entries_[i].cache;
      if (c.recent != nullptr) entries_[i].depot->Give(c.recent);
      if (c.refill != nullptr) entries_[i].depot->Give(c.refill);
      c.recent = c.refill = nullptr;
      c.recent_count = 0;
      // From here on, a late free or allocation of this thread goes straight
      // to the depot (the fast paths need `registered`, or empty lists).
      c.registered = false;
      c.exited = true;
    }
  }
  bool Add(CellCache& cache, CellDepot& depot) {
    if (used_ == kMax) return false;
    entries_[used_++] = {&cache, &depot};
    return true;
  }

 private:
  static constexpr int kMax = 8;
  struct Entry {
    CellCache* cache;
    CellDepot* depot;
  };
  Entry entries_[kMax] = {};
  int used_ = 0;
};

thread_local CacheFlusher tls_flusher;

// Makes sure `cache` is flushed at thread exit; false if the thread is
// exiting (or out of table slots), when the cache must stay empty.
bool EnsureRegistered(CellCache& cache, CellDepot& depot) {
  if (cache.registered) return true;
  if (cache.exited || !tls_flusher.Add(cache, depot)) return false;
  cache.registered = true;
  return true;
}

}  // namespace

void* CellAllocateSlow(CellCache& cache, CellDepot& depot, uint32_t batch) {
  uint32_t n = 0;
  if (!EnsureRegistered(cache, depot)) return depot.Take(1, &n);
  FreeCell* cells = depot.Take(batch, &n);
  if (cells == nullptr) return nullptr;
  cache.refill = cells->next;
  return cells;
}

void CellFreeSlow(CellCache& cache, CellDepot& depot, FreeCell* cell,
                  uint32_t batch) {
  if (!EnsureRegistered(cache, depot)) {
    cell->next = nullptr;
    depot.Give(cell);
    return;
  }
  if (cache.recent_count >= batch) {
    depot.Give(cache.recent);
    cache.recent = nullptr;
    cache.recent_count = 0;
  }
  cell->next = cache.recent;
  cache.recent = cell;
  ++cache.recent_count;
}

}  // namespace tickwheel::internal
