// worker/cell_pool.cc
// The thread caches' slow paths, and the flush of every cache at thread exit.

#include "tickwheel/worker/cell_pool.h"

#include <cstdint>

namespace tickwheel::internal {
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

void* CellCache::AllocateSlow(CellDepot& depot, uint32_t batch) {
  uint32_t n = 0;
  if (!EnsureRegistered(*this, depot)) return depot.Take(1, &n);
  FreeCell* cells = depot.Take(batch, &n);
  if (cells == nullptr) return nullptr;
  refill = cells->next;
  return cells;
}

void CellCache::FreeSlow(CellDepot& depot, FreeCell* cell, uint32_t batch) {
  if (!EnsureRegistered(*this, depot)) {
    cell->next = nullptr;
    depot.Give(cell);
    return;
  }
  if (recent_count >= batch) {
    depot.Give(recent);
    recent = nullptr;
    recent_count = 0;
  }
  cell->next = recent;
  recent = cell;
  ++recent_count;
}

}  // namespace tickwheel::internal
