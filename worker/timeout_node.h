// worker/timeout_node.h
// -----------------------------------------------------------------------------
// Internal. The heap object behind a Timeout handle: its protocol word and
// deadline (worker/node_state.h, which decides which of cancel(), expiry and
// stop() gets it), its task, its place in the wheel and its queue link. The
// producer-side state it refers to is worker/shared_state.h.
//
// Who owns which field: `deadline` and the word as worker/node_state.h says;
// `where` is the worker's; the task belongs to the winner of the node; `next`
// to whichever queue holds the node, or it holds the lane cell.
//
// Who tells the worker about a cancellation. A node cancelled while kQueued
// is still in its shard's lane or pending queue. In the lane, cancel() takes
// it back (worker/lane.h) together with the worker's reference, unless the
// worker took the cell first; in the queue, or when the take-back fails, the
// worker finds it cancelled (Arm() fails) and drops its reference. The taker
// settles the emptied cell: back to the ring (Unclaim) if it is still its
// lane's last claimed one, so a schedule-then-cancel loop reuses one cell;
// otherwise a tombstone (Bury) the worker skips. A take-back that loses the
// state to another cancel() buries its cell. The take-back may come after the
// timer is gone: lane arrays are type-stable (worker/lane_arrays.h), so the
// CAS then fails harmlessly.
//
// A node cancelled while kArmed is linked in the wheel, so cancel() pushes it
// on the notice queue through the same `next` link: once popped, no producer
// writes the link again (worker/mpsc_queue.h), so a node is never in two
// queues. The worker's reference keeps a node alive while it sits in one.
//
// The shared state outlives every call that reaches it: newTimeout() and a
// winning cancel() hold a pending slot in SharedTimerState while they touch
// the queues, a reset() holds kBusy on a pending node, and stop() does not
// return before the slots sum to zero, every lane is drained and every node
// it collects has kBusy clear.

#ifndef TICKWHEEL_WORKER_TIMEOUT_NODE_H_
#define TICKWHEEL_WORKER_TIMEOUT_NODE_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "absl/base/config.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/node_state.h"

namespace tickwheel::internal {

// Nodes live in 48-byte cells of their own pool, 16-byte aligned, so a
// node's first 16 bytes (deadline, word, `where`: what filing, cascading and
// unlinking touch) never straddle a cache line. With its 8-byte wheel slot
// and its share of the chunk headers, a pending timeout costs about 56 bytes.
inline constexpr size_t kNodeCellSize = 48;
struct NodePoolTag;
using NodePool = CellPool<NodePoolTag, kNodeCellSize>;

struct TimeoutNode : NodeState {
  // One 48-byte cell of NodePool (worker/cell_pool.h): no malloc header, and
  // an allocation and a free that are a thread-local list pop and push,
  // whichever thread drops the last reference. Filing a node or moving it
  // down a level touches its first 16 bytes, which lie in one cache line.
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
  // ASan and LeakSanitizer see every node as its own heap block.
  static constexpr bool kPooled = false;
#else
  static constexpr bool kPooled = true;
#endif
  static void* operator new(size_t size, const std::nothrow_t&) noexcept {
    if constexpr (kPooled) return NodePool::Allocate();
    return ::operator new(size, std::nothrow);
  }
  static void* operator new(size_t size) {
    void* p = operator new(size, std::nothrow);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  static void operator delete(void* p) noexcept {
    if constexpr (kPooled) {
      NodePool::Free(p);
    } else {
      ::operator delete(p);
    }
  }

  TimeoutNode() = default;
  TimeoutNode(const TimeoutNode&) = delete;
  TimeoutNode& operator=(const TimeoutNode&) = delete;

  // Worker-only: where the wheel holds the node, its level and its index in
  // its bucket's array (see worker/wheel.h). The bucket itself is the one
  // `deadline` names, unless a reset() has moved the deadline since the
  // worker filed the node: then the wheel looks for it (Wheel::Remove()).
  static constexpr uint32_t kUnlinked = 0xF0000000u;
  uint32_t where = kUnlinked;

  // The worker's look at a node it has filed: true, with *d its deadline,
  // if no reset() has moved the deadline since (neither kBusy nor kMoved);
  // false too after a reset() that landed just before the filing. The
  // deadline is read first, with acquire: reset() stores it with release
  // after the RMW that took kBusy, so a load that reads a new deadline is
  // followed by a word load that sees kBusy, or the kMoved that the
  // releasing RMW sets (only the worker clears it).
  bool UnmovedDeadline(int64_t* d) const {
    *d = deadline.load(std::memory_order_acquire);
    return !Has(kBusy | kMoved);
  }

  // Pending-queue link; while the node sits in a fast lane, its cell's
  // address, tagged (LaneCell()); once the worker has armed the node, the
  // notice queue's link. A LocalTimer's node holds its owner thread's tag
  // (OwnerTag()) from Schedule() until a notice first takes it through the
  // queue.
  std::atomic<TimeoutNode*> next{nullptr};

  // The calling thread's tag for `next`: the address of a thread-local
  // object, with bit 0 set. No node (a queue's own sentinel included) and
  // no lane cell is at that address, so it never equals a link or a tagged
  // cell, and no two live threads share it. A cancel() that finds its own
  // thread's tag in an armed node runs on that node's LocalTimer's owner
  // thread (worker/local_engine.h).
  static TimeoutNode* OwnerTag() {
    static thread_local char tag;
    return reinterpret_cast<TimeoutNode*>(reinterpret_cast<uintptr_t>(&tag) |
                                          1);
  }
  // Whether this thread drives the LocalTimer of this armed node: `next`
  // holds its tag and the state is kArmed (a look; the claim decides). Then
  // the engine is alive: only its owner could have destroyed it on this
  // thread, and that would have stopped the node first.
  bool OwnedByThisThread() const {
    return next.load(std::memory_order_relaxed) == OwnerTag() &&
           state() == TimeoutState::kArmed;
  }

  // The callable, in 24 bytes (base/task_slot.h).
  TaskSlot task_slot;

  TaskSlot& task() { return task_slot; }

  // The lane cell newTimeout() published the node in, kept in `next` with
  // bit 0 set (node pointers and cells are 8-aligned, so a queue link never
  // has it). Written before the node is published; read by cancel(),
  // whose handle came from newTimeout().
  using LaneCellPtr = std::atomic<TimeoutNode*>*;
  void SetLaneCell(LaneCellPtr cell) {
    next.store(
        reinterpret_cast<TimeoutNode*>(reinterpret_cast<uintptr_t>(cell) | 1),
        std::memory_order_relaxed);
  }
  // The cell, or nullptr for a node that went through the pending queue.
  // Only meaningful while the state is kQueued: once armed, `next` belongs
  // to the notice queue.
  LaneCellPtr LaneCell() const {
    const auto v =
        reinterpret_cast<uintptr_t>(next.load(std::memory_order_relaxed));
    return (v & 1) != 0 ? reinterpret_cast<LaneCellPtr>(v & ~uintptr_t{1})
                        : nullptr;
  }

  // Drops one reference; the last one deletes the node (and any task in it).
  void Unref() {
    if (DropRef()) delete this;
  }
};

// Owns one reference to a node and drops it when destroyed (the worker's
// reference, in a closure handed to a task executor).
class NodeRef {
 public:
  explicit NodeRef(TimeoutNode* node) : node_(node) {}
  NodeRef(NodeRef&& other) noexcept
      : node_(std::exchange(other.node_, nullptr)) {}
  NodeRef& operator=(NodeRef&&) = delete;
  ~NodeRef() {
    if (node_ != nullptr) node_->Unref();
  }
  TimeoutNode* get() const { return node_; }

 private:
  TimeoutNode* node_;
};

// A pending timeout costs one 48-byte cell, plus its 8-byte slot in a wheel
// bucket. `where` fills the tail padding of NodeState (deadline and word),
// so those three are the node's first 16 bytes, what the wheel touches
// while filing.
static_assert(sizeof(NodeState) == 16 && sizeof(TimeoutNode) == kNodeCellSize,
              "TimeoutNode fills its 48-byte pool cell exactly");

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_TIMEOUT_NODE_H_
