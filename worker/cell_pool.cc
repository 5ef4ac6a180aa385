// worker/cell_pool.cc
// The thread caches' slow paths, and the flush of every cache at thread exit.

#include "tickwheel/worker/cell_pool.h"

#include <cstdint>

namespace tickwheel::internal {
namespace {

// Gives the list at `head` back to `depot`, `batch` cells per Give(): one
// mutex hold per batch, however long the list.
void GiveInBatches(CellDepot& depot, FreeCell* head, uint32_t batch) {
  while (head != nullptr) {
    FreeCell* last = head;
    for (uint32_t n = 1; n < batch && last->next != nullptr; ++n) {
      last = last->next;
    }
    FreeCell* const rest = last->next;
    last->next = nullptr;
    depot.Give(head);
    head = rest;
  }
}

// One per thread that used a pool; its destructor runs at thread exit and
// gives every cached cell back. A thread uses few pools: a small table.
class CacheFlusher {
 public:
  ~CacheFlusher() {
    for (int i = 0; i < used_; ++i) {
      const Entry& e = entries_[i];
      CellCache& c = *e.cache;
      // A thread that exits while it holds frees holds many: give them in
      // the pool's batches, as ReturnHeld() does.
      c.GiveRecent(*e.depot, e.batch);
      if (c.refill != nullptr) e.depot->Give(c.refill);
      c.refill = nullptr;
      // From here on, a late free or allocation of this thread goes straight
      // to the depot (the fast paths need a limit above zero, or cells on
      // the lists).
      c.recent_limit = 0;
      c.exited = true;
    }
  }
  bool Add(CellCache& cache, CellDepot& depot, uint32_t batch) {
    if (used_ == kMax) return false;
    entries_[used_++] = {&cache, &depot, batch};
    return true;
  }

 private:
  static constexpr int kMax = 8;
  struct Entry {
    CellCache* cache;
    CellDepot* depot;
    uint32_t batch;  // the pool's
  };
  Entry entries_[kMax] = {};
  int used_ = 0;
};

thread_local CacheFlusher tls_flusher;

// Makes sure `cache` is flushed at thread exit; false if the thread is
// exiting (or out of table slots), when the cache must stay empty.
bool EnsureRegistered(CellCache& cache, CellDepot& depot, uint32_t batch) {
  if (cache.recent_limit != 0) return true;
  if (cache.exited || !tls_flusher.Add(cache, depot, batch)) return false;
  cache.recent_limit = batch;
  return true;
}

}  // namespace

void* CellCache::AllocateSlow(CellDepot& depot, uint32_t batch) {
  uint32_t n = 0;
  if (!EnsureRegistered(*this, depot, batch)) return depot.Take(1, &n);
  FreeCell* cells = depot.Take(batch, &n);
  if (cells == nullptr) return nullptr;
  refill = cells->next;
  return cells;
}

void CellCache::FreeSlow(CellDepot& depot, FreeCell* cell, uint32_t batch) {
  if (!EnsureRegistered(*this, depot, batch)) {
    cell->next = nullptr;
    depot.Give(cell);
    return;
  }
  if (recent_count >= recent_limit) {  // a batch, or a hold at its cap
    GiveRecent(depot, batch);
  }
  cell->next = recent;
  recent = cell;
  ++recent_count;
}

void CellCache::Hold(CellDepot& depot, uint32_t batch, uint32_t cap) {
  if (EnsureRegistered(*this, depot, batch)) recent_limit = cap;
}

void CellCache::ReturnHeld(CellDepot& depot, uint32_t batch) {
  recent_limit = batch;
  if (recent_count >= batch) GiveRecent(depot, batch);
}

void CellCache::GiveRecent(CellDepot& depot, uint32_t batch) {
  GiveInBatches(depot, recent, batch);
  recent = nullptr;
  recent_count = 0;
}

}  // namespace tickwheel::internal
