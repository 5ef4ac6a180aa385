// worker/cell_pool.cc

#include "tickwheel/worker/cell_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tickwheel/worker/fork_guard.h"

namespace tickwheel::internal {

// At the front of every chunk; the bitmap follows it, then the cells.
struct CellDepot::ChunkHeader {
  uint32_t index;   // in chunks_
  uint32_t free;    // cells whose bit is set
  uint32_t cursor;  // no free bit in any word before this one
  uint32_t words;   // bitmap words
  uint32_t released;  // 1: its cell pages were given back to the kernel
  uint32_t unused;
  uint64_t* bits() { return reinterpret_cast<uint64_t*>(this + 1); }
};


namespace {

constexpr size_t kChunk = CellDepot::kChunkBytes;

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

// A freshly mapped chunk with every page faulted in, or nullptr when out of
// memory. Slow (0.1-5 ms): never called with a depot's mutex held.
char* MapFaultedChunk() {
  char* base = MapAligned();
  if (base == nullptr) return nullptr;
  // One write per page faults the chunk in (one fault when it gets a huge
  // page). Volatile, so that the writes are not optimised away.
  for (size_t off = 0; off < kChunk; off += 4096) {
    static_cast<volatile char*>(static_cast<void*>(base))[off] = 0;
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

}  // namespace

// In the child, only the thread that forked exists: chunks that other
// threads were mapping will never arrive, so nobody may wait for them.
void CellDepot::ForgetMappersInChild(void* depot)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<CellDepot*>(depot)->mappers_ = 0;
}

CellDepot::CellDepot(size_t cell_size)
    : cell_size_(cell_size),
      divide_(CellDivider::For(cell_size)) {
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
  char* base = reserve_.back();
  reserve_.pop_back();
  auto* h = reinterpret_cast<ChunkHeader*>(base);
  h->index = static_cast<uint32_t>(chunks_.size());
  h->free = static_cast<uint32_t>(cells_per_chunk_);
  h->cursor = 0;
  h->words = static_cast<uint32_t>((cells_per_chunk_ + 63) / 64);
  h->released = 0;
  uint64_t* bits = h->bits();
  for (uint32_t w = 0; w < h->words; ++w) bits[w] = ~uint64_t{0};
  if (const size_t tail = cells_per_chunk_ % 64; tail != 0) {
    bits[h->words - 1] = (uint64_t{1} << tail) - 1;
  }
  chunks_.push_back(h);
  free_cells_ += cells_per_chunk_;
  return h;
}

FreeCell* CellDepot::Take(uint32_t max, uint32_t* count) {
  while (true) {
    bool map = false;
    {
      MutexLock lock(&mu_, MutexLock::kSpinFirst);
      if (FreeCell* head = TakeLocked(max, count)) return head;
      if (mappers_ < kMaxMappers) {
        ++mappers_;
        map = true;
      }
    }
    if (!map) {
      // kMaxMappers chunks are on their way: wait for one rather than map
      // more, which would stay in reserve for good. Polling, since a
      // condition variable's own lock could be inherited locked by fork().
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      continue;
    }
    // Every chunk is full and no faulted-in chunk is in reserve. Map and
    // fault one in here, outside the mutex: zeroing 2 MiB (on a VM, perhaps
    // also the host backing it) takes 0.1-5 ms, during which other threads
    // must still be able to take and give back cells. Up to kMaxMappers
    // threads do this at once (two producers that run out together each
    // fault one in, in parallel); a spare chunk stays in reserve.
    if (!MapIntoReserve()) return nullptr;  // out of memory: *count is 0
  }
}

bool CellDepot::MapIntoReserve() {
  char* base = MapFaultedChunk();
  MutexLock lock(&mu_);
  --mappers_;
  if (base == nullptr) return false;
  reserve_.push_back(base);
  return true;
}

FreeCell* CellDepot::TakeLocked(uint32_t max, uint32_t* count) {
  FreeCell* head = nullptr;
  FreeCell** tail = &head;
  uint32_t n = 0;
  while (n < max) {
    while (first_with_free_ < chunks_.size() &&
           chunks_[first_with_free_]->free == 0) {
      ++first_with_free_;
    }
    if (first_with_free_ == chunks_.size()) {
      if (n > 0 || AddChunk() == nullptr) break;  // partial, or none reserved
      continue;
    }
    ChunkHeader* h = chunks_[first_with_free_];
    h->released = 0;  // its pages fault in again as cells are used
    uint64_t* bits = h->bits();
    char* cells = reinterpret_cast<char*>(h) + first_cell_offset_;
    const uint32_t before = n;
    uint32_t w = h->cursor;
    for (; w < h->words && n < max; ++w) {
      uint64_t word = bits[w];
      while (word != 0 && n < max) {
        const size_t i = size_t{w} * 64 + static_cast<size_t>(std::countr_zero(word));
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
  if (free_cells_ < cells_per_chunk_ / 4 && reserve_.size() < kReserveChunks) {
    want_reserve_.store(true, std::memory_order_relaxed);
  }
  return head;
}

void CellDepot::Replenish() {
  // One caller at a time does the work; a request that comes meanwhile sets
  // the flag again and is served by the next call.
  if (!want_reserve_.load(std::memory_order_relaxed) ||
      !want_reserve_.exchange(false, std::memory_order_relaxed)) {
    return;
  }
  {
    MutexLock lock(&mu_);
    // A chunk on its way from Take() serves the request as well.
    if (reserve_.size() >= kReserveChunks || mappers_ > 0) return;
    ++mappers_;
  }
  MapIntoReserve();
}

void CellDepot::Give(FreeCell* head) {
  MutexLock lock(&mu_, MutexLock::kSpinFirst);
  // Per cell, only its bit is set here; the chunk's counters, cursor and the
  // depot's totals are settled once per run of cells from the same chunk
  // (Settle). A thread's cells mostly come back in runs (a burst expires in
  // allocation order; a refill hands out cells of one chunk), so most cells
  // cost one bit.
  ChunkHeader* h = nullptr;
  uint32_t given = 0;     // cells of `h` in this run
  uint32_t lowest = 0;    // the lowest bitmap word they set a bit in
  // Locals: the bitmap stores could alias the members, which the compiler
  // would then reload for every cell.
  const CellDivider divide = divide_;
  const size_t first_cell = first_cell_offset_;
  for (FreeCell* cell = head; cell != nullptr;) {
    FreeCell* next = cell->next;
    ChunkHeader* owner = HeaderOf(cell);
    if (owner != h) {
      if (h != nullptr) Settle(h, given, lowest);
      h = owner;
      given = 0;
      lowest = UINT32_MAX;
    }
    const auto offset = static_cast<size_t>(reinterpret_cast<char*>(cell) -
                                            reinterpret_cast<char*>(h) -
                                            first_cell);
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
  if (h != nullptr) Settle(h, given, lowest);
}

void CellDepot::Settle(ChunkHeader* h, uint32_t given, uint32_t lowest) {
  h->free += given;
  if (lowest < h->cursor) h->cursor = lowest;
  if (h->index < first_with_free_) first_with_free_ = h->index;
  free_cells_ += given;
  // `free` only grows within a Give(), so a chunk that filled up during the
  // run is full at its end; the spare test sees every cell given so far.
  if (h->free == cells_per_chunk_) ReleaseIfSpare(h);
}

void CellDepot::ReleaseIfSpare(ChunkHeader* h) {
  // Keep kKeptFreeChunks chunks' worth of other free cells before giving
  // memory back, so that a steady load does not fault the same pages in and
  // out. The header's pages stay: the bitmap lives there.
  if (free_cells_ - h->free < kKeptFreeChunks * cells_per_chunk_) {
    return;
  }
  char* base = reinterpret_cast<char*>(h);
  const size_t page = 4096;
  const size_t from = (first_cell_offset_ + page - 1) / page * page;
  // Free cells hold nothing (their links live in thread caches, never in
  // the depot), so zero pages on the next touch are as good.
  if (madvise(base + from, kChunk - from, MADV_DONTNEED) == 0) {
    h->released = 1;
  }
}

size_t CellDepot::MappedBytes() const {
  MutexLock lock(&mu_);
  return (chunks_.size() + reserve_.size()) * kChunk;
}

size_t CellDepot::ReleasedChunks() const {
  MutexLock lock(&mu_);
  size_t released = 0;
  for (const ChunkHeader* h : chunks_) released += h->released;
  return released;
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
