// timer/cell_pool.cc

#include "timer/cell_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tickwheel::internal {
namespace {

// A 2 MiB-aligned chunk of kChunkBytes, or nullptr. Aligned so that the
// kernel can back it with one transparent huge page.
char* MapChunk() {
  constexpr size_t kBytes = CellDepot::kChunkBytes;
  void* raw = mmap(nullptr, 2 * kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kBytes - 1) & ~uintptr_t{kBytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + 2 * kBytes;
  if (end > aligned + kBytes) {
    munmap(reinterpret_cast<void*>(aligned + kBytes), end - aligned - kBytes);
  }
  // Advice only: without THP the chunk is plain 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), kBytes, MADV_HUGEPAGE);
  return reinterpret_cast<char*>(aligned);
}

// Gives every cell of `cache` back to `depot` and empties it.
void Flush(CellCache& cache, CellDepot& depot, size_t cell_size) {
  if (cache.loaded_count > 0) depot.Give(cache.loaded, cache.loaded_count);
  if (cache.spare_count > 0) depot.Give(cache.spare, cache.spare_count);
  // Unused fresh cells become a list: at most one batch of writes.
  FreeCell* head = nullptr;
  uint32_t count = 0;
  for (char* p = cache.fresh; p < cache.fresh_end; p += cell_size) {
    auto* cell = reinterpret_cast<FreeCell*>(p);
    cell->next = head;
    head = cell;
    ++count;
  }
  if (count > 0) depot.Give(head, count);
  cache.loaded = cache.spare = nullptr;
  cache.loaded_count = cache.spare_count = 0;
  cache.fresh = cache.fresh_end = nullptr;
}

// One per thread and pool that used the cache; its destructor runs at thread
// exit. A thread uses few pools, so a small fixed table suffices.
class CacheFlusher {
 public:
  ~CacheFlusher() {
    for (int i = 0; i < used_; ++i) {
      Flush(*entries_[i].cache, *entries_[i].depot, entries_[i].cell_size);
      entries_[i].cache->exited = true;
    }
  }
  bool Add(CellCache& cache, CellDepot& depot, size_t cell_size) {
    if (used_ == kMax) return false;
    entries_[used_++] = {&cache, &depot, cell_size};
    return true;
  }

 private:
  static constexpr int kMax = 8;
  struct Entry {
    CellCache* cache;
    CellDepot* depot;
    size_t cell_size;
  };
  Entry entries_[kMax] = {};
  int used_ = 0;
};

thread_local CacheFlusher tls_flusher;

// Makes sure `cache` is flushed at thread exit; false if the thread is
// exiting (or out of flusher slots), when the cache must not hold cells.
bool EnsureRegistered(CellCache& cache, CellDepot& depot, size_t cell_size) {
  if (cache.registered) return true;
  if (cache.exited) return false;
  if (!tls_flusher.Add(cache, depot, cell_size)) return false;
  cache.registered = true;
  return true;
}

}  // namespace

CellDepot::Batch CellDepot::Take(uint32_t count) {
  MutexLock lock(&mu_);
  if (!lists_.empty()) {
    Batch b = lists_.back();
    lists_.pop_back();
    return b;
  }
  if (carve_ == carve_end_) {
    char* chunk = MapChunk();
    if (chunk == nullptr) return {};
    carve_ = chunk;
    carve_end_ = chunk + kChunkBytes / cell_size_ * cell_size_;
    mapped_ += kChunkBytes;
  }
  const auto left = static_cast<size_t>(carve_end_ - carve_) / cell_size_;
  Batch b;
  b.fresh = carve_;
  b.count = static_cast<uint32_t>(std::min<size_t>(count, left));
  carve_ += size_t{b.count} * cell_size_;
  return b;
}

void CellDepot::Give(FreeCell* head, uint32_t count) {
  MutexLock lock(&mu_);
  lists_.push_back(Batch{head, nullptr, count});
}

size_t CellDepot::MappedBytes() const {
  MutexLock lock(&mu_);
  return mapped_;
}

void* CellAllocateSlow(CellCache& cache, CellDepot& depot, size_t cell_size,
                       uint32_t batch) {
  if (!EnsureRegistered(cache, depot, cell_size)) {
    // Exiting thread: take one cell and give the rest of the list back.
    CellDepot::Batch b = depot.Take(1);
    if (b.count == 0) return nullptr;
    if (b.head == nullptr) return b.fresh;  // Take(1) carved exactly one
    FreeCell* cell = b.head;
    if (b.count > 1) depot.Give(cell->next, b.count - 1);
    return cell;
  }
  if (cache.spare_count > 0) {
    std::swap(cache.loaded, cache.spare);
    std::swap(cache.loaded_count, cache.spare_count);
  } else if (cache.fresh == cache.fresh_end) {
    CellDepot::Batch b = depot.Take(batch);
    if (b.count == 0) return nullptr;
    if (b.head != nullptr) {
      cache.loaded = b.head;
      cache.loaded_count = b.count;
    } else {
      cache.fresh = b.fresh;
      cache.fresh_end = b.fresh + size_t{b.count} * cell_size;
    }
  }
  if (FreeCell* cell = cache.loaded) {
    cache.loaded = cell->next;
    --cache.loaded_count;
    return cell;
  }
  char* cell = cache.fresh;
  cache.fresh += cell_size;
  return cell;
}

void CellFreeSlow(CellCache& cache, CellDepot& depot, size_t cell_size,
                  FreeCell* cell, uint32_t batch) {
  if (!EnsureRegistered(cache, depot, cell_size)) {
    cell->next = nullptr;
    depot.Give(cell, 1);
    return;
  }
  if (cache.loaded_count >= batch) {
    if (cache.spare_count > 0) depot.Give(cache.spare, cache.spare_count);
    cache.spare = cache.loaded;
    cache.spare_count = cache.loaded_count;
    cache.loaded = nullptr;
    cache.loaded_count = 0;
  }
  cell->next = cache.loaded;
  cache.loaded = cell;
  ++cache.loaded_count;
}

}  // namespace tickwheel::internal
