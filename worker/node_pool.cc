#include "worker/node_pool.h"

#include <cassert>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace tickwheel::internal {
namespace {

struct FreeBlock {
  FreeBlock* next;
};

struct List {
  FreeBlock* head = nullptr;
  int count = 0;

  void Push(FreeBlock* b) {
    b->next = head;
    head = b;
    ++count;
  }
  FreeBlock* Pop() {
    FreeBlock* b = head;
    head = b->next;
    --count;
    return b;
  }
};

// Full batches shared by all threads, and every slab ever made (kept
// reachable: slabs are never freed).
struct Shared {
  std::mutex mu;
  std::vector<FreeBlock*> batches;  // each a list of kBatch blocks
  std::vector<void*> slabs;
  size_t block_size = 0;
};

Shared& GetShared() {
  static Shared* const shared = new Shared;
  return *shared;
}

// One per thread. `in` serves Allocate(); Free() fills `out`, which leaves
// for the shared stack once full. A thread that both allocates and frees
// recycles through `out` -> `in` without the lock.
struct ThreadCache {
  List in;
  List out;

  ~ThreadCache() {
    // Hand everything back so that other threads can use it.
    Shared& shared = GetShared();
    std::lock_guard<std::mutex> lock(shared.mu);
    for (List* l : {&in, &out}) {
      if (l->head != nullptr) shared.batches.push_back(l->head);
      l->head = nullptr;
      l->count = 0;
    }
  }
};

thread_local ThreadCache cache;

void Refill(size_t size) {
  Shared& shared = GetShared();
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    assert(shared.block_size == 0 || shared.block_size == size);
    shared.block_size = size;
    if (!shared.batches.empty()) {
      FreeBlock* batch = shared.batches.back();
      shared.batches.pop_back();
      for (FreeBlock* b = batch; b != nullptr;) {
        FreeBlock* next = b->next;
        cache.in.Push(b);
        b = next;
      }
      return;
    }
  }
  const size_t stride =
      (size + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
  char* slab = static_cast<char*>(std::malloc(stride * NodePool::kBatch));
  if (slab == nullptr) throw std::bad_alloc();
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    shared.slabs.push_back(slab);
  }
  for (int i = NodePool::kBatch - 1; i >= 0; --i) {
    cache.in.Push(reinterpret_cast<FreeBlock*>(slab + i * stride));
  }
}

}  // namespace

void* NodePool::Allocate(size_t size) {
  if (cache.in.head == nullptr) {
    if (cache.out.head != nullptr) {
      std::swap(cache.in, cache.out);  // reuse what this thread freed
    } else {
      Refill(size);
    }
  }
  return cache.in.Pop();
}

void NodePool::Free(void* block, size_t size) {
  (void)size;
  cache.out.Push(static_cast<FreeBlock*>(block));
  if (cache.out.count == kBatch) {
    Shared& shared = GetShared();
    std::lock_guard<std::mutex> lock(shared.mu);
    shared.batches.push_back(cache.out.head);
    cache.out.head = nullptr;
    cache.out.count = 0;
  }
}

}  // namespace tickwheel::internal
