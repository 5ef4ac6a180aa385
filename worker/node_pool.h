// worker/node_pool.h
// -----------------------------------------------------------------------------
// Internal. A process-wide recycler for fixed-size blocks, used for
// TimeoutNodes (through TimeoutNode's class-specific operator new/delete).
//
// Why: a node is allocated by a producer thread and usually freed by the
// worker thread, after it ran or was cancelled. With plain malloc that
// cross-thread pattern defeats the allocator's per-thread caches: about 300
// instructions per node (callgrind) and arena lock traffic, more than the rest
// of newTimeout() and expiry together. Here each thread keeps two small lists
// of free blocks, one to allocate from and one that its frees fill; full lists
// of kBatch blocks move between threads through one mutex-protected stack, so
// the lock is taken once per kBatch blocks. New memory comes in slabs of
// kBatch blocks, with no per-block malloc header.
//
// Trade-off: memory is recycled, never returned to the system: the pool keeps
// the high-water mark of live nodes (kBlockSize bytes each). That is the usual
// choice for a timer service, whose pending count tends to be steady.
//
// Under ASan and TSan, TimeoutNode bypasses the pool (see timeout_node.h), so
// that the sanitizers see every node's real lifetime; node_pool_test covers
// the pool itself under TSan.
//
// Thread-safety: Allocate() and Free() may be called from any thread; a block
// may be freed by another thread than the one that allocated it. Ordering: a
// block travels between threads only through the mutex, which orders
// everything the freeing thread did to it before the allocating thread's use.

#ifndef TICKWHEEL_WORKER_NODE_POOL_H_
#define TICKWHEEL_WORKER_NODE_POOL_H_

#include <cstddef>

namespace tickwheel::internal {

class NodePool {
 public:
  // Blocks per batch and per slab.
  static constexpr int kBatch = 64;

  // A block of at least `size` bytes, aligned for any scalar type. `size`
  // must be the same on every call (the pool serves one block size).
  static void* Allocate(size_t size);
  // Returns a block obtained from Allocate(size).
  static void Free(void* block, size_t size);
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_NODE_POOL_H_
