// worker/timeout_node.h
// -----------------------------------------------------------------------------
// Internal. The heap object behind a Timeout handle: its task, its deadline,
// its place in the wheel, and the state machine that decides which of
// cancel(), expiry and stop() gets it. The producer-side state it refers to
// is worker/shared_state.h.
//
// Ground rules
// ------------
// A node is created by Timer::newTimeout() and lives while anyone holds a
// reference: each Timeout handle holds one; the worker holds one from
// newTimeout() until it is done with the node (the "worker reference"). A
// handle object may be used by several threads at once (its methods are
// const), so no step may assume that the caller's reference is the only
// handle, or that no other thread calls through the same handle.
//
// The reference count and the state share one atomic word (`refs_state`:
// the references, kInFlight, the TimeoutState and the kBusy / kMoved /
// kNoticed / kPeriodic flags; the layout is at the word below), so that a node
// fits one 64-byte pool cell. Every change of the word is an RMW whose result
// decides, with one exception (the worker's arm and expiry claim, below)
// whose precondition no other thread can break.
//
// The protocol: each row is one step, who may take it, and how.
//
//   from        to          who            how, and why no other step races it
//   ----------  ----------  -------------  ----------------------------------
//   (new)       kQueued,2   newTimeout()   plain store before the node is
//                                          published: nobody else has it.
//   kQueued     kArmed      worker         after popping it from its lane or
//                                          queue: CAS (Arm(): a
//                                          plain store when refs == 1, since
//                                          then no handle exists and none can
//                                          be made, so nothing can race).
//   kQueued     kCancelled  cancel()       after taking it back out of its
//               (refs - 1)  (take-back     lane cell, which makes it the
//                           first)         worker's-reference holder: one
//                                          XADD (CancelTakenBack) moves the
//                                          state and drops that reference.
//                                          Only another cancel() can have
//                                          moved the state meanwhile (expiry
//                                          and stop() need the node popped);
//                                          then the XADD lands on kCancelled
//                                          and makes kCancelledAgain, which
//                                          reads as cancelled and has no way
//                                          out, and the caller returns false.
//   kQueued,    kCancelled  cancel()       CAS. The winner destroys the
//   kArmed,                                task (once kBusy is clear); for
//   kRunning                               kArmed it pushes the node on the
//                                          notice queue (kNoticed, below)
//                                          unless a reset() did; for
//                                          kRunning the worker sees it when
//                                          the run returns; for kQueued it
//                                          tries the take-back (a racing
//                                          take-back-first cancel() or the
//                                          worker may hold the cell instead).
//   kArmed      kExpired    worker         CAS (Worker::Expire(): as Arm()).
//   kQueued,    kStopped    stop()         CAS, after the worker has been
//   kArmed                                 joined and the node popped.
//   kStopped    kStoppedTaken takeTask()   CAS: of racing calls one wins.
//   kQueued,    kCancelled  cancelAll()    CAS, by the worker (a cancelAll()
//   kArmed,                 (on the        from another thread asks it and
//   kRunning                worker)        waits). No notice: the worker
//                                          unlinks what it cancels itself.
//                                          Against a racing cancel() the
//                                          CAS decides; either may land while
//                                          a reset() holds kBusy, and the
//                                          winner waits for kBusy to clear
//                                          before it destroys the task.
//
// reset() and periodic runs never change the state of a node that someone
// else may claim; they take the kBusy flag instead:
//
//   flag        set by         how, and what it means
//   ----------  -------------  ------------------------------------------
//   kBusy       reset(),       CAS on a pending state (AcquireBusy), waiting
//               worker (a      while another holder has it. The holder alone
//               periodic run)  writes `deadline`; a claim that lands
//                              meanwhile (cancel(), cancelAll(), arm,
//                              expiry, stop()) waits for it before touching
//                              the task or the deadline. Dropped by one RMW
//                              (ReleaseBusy, release).
//   kMoved      reset(), with  the deadline changed since the worker filed
//               kBusy's drop   the node: before it expires or arms one, the
//                              worker re-reads `deadline` and re-files the
//                              node if it is later; cleared by Arm().
//   kNoticed    cancel() or    the node is on its shard's notice queue: set
//               reset() to an  in the RMW that decides the push (only on a
//               earlier        kArmed node), so it is pushed once; cleared
//               deadline       by the worker when it pops it.
//   kRunning    worker         a periodic run in progress: kArmed -> kRunning
//   (state)                    with kBusy (the run takes its own reference
//                              to the callable), then the run with kBusy
//                              clear; then kRunning -> kArmed at the next
//                              grid time (or the reset() deadline), unless a
//                              cancel() won meanwhile, which made this run
//                              the last. With a task_executor the node stays
//                              kArmed and filed, kInFlight marks the run, and
//                              a run that comes while kInFlight is set is
//                              skipped, so runs never overlap.
//
//   refs + 1                copy           fetch_add (Ref): never a store.
//   refs - 1                drop           fetch_sub, or, when the caller's
//                                          reference is the only one (refs ==
//                                          1), delete without an RMW: nobody
//                                          else holds or can gain one.
//
// So exactly one of cancel(), expiry and stop() wins each node: a cancel
// that races an expiry returns true only if it won, in which case the task
// never runs. The winner alone may touch `task` afterwards (cancel()
// destroys it, the worker runs it, stop() hands it to takeTask()).
//
// Who tells the worker about a cancellation: a node cancelled while kQueued
// is still in its shard's lane or pending queue. In the lane, cancel() takes
// it back (worker/lane.h) together with the worker's reference, unless the
// worker took the cell first; in the queue, or when the take-back fails, the
// worker finds it cancelled (its CAS to kArmed fails) and drops its
// reference. The taker settles the emptied cell: it goes back to the ring
// (Unclaim) if it is still its lane's last claimed one, so that a
// schedule-then-cancel loop reuses one cell and the worker has nothing to
// drain; any other cell gets a tombstone (Bury), which the worker skips. A
// take-back that loses the state to another cancel() buries its cell and
// drops the worker's reference itself. The take-back may come after the
// timer is gone (the node could have been popped, run and stop()ped
// meanwhile); lane arrays are type-stable (worker/lane_arrays.h), so the
// CAS then fails harmlessly.
//
// A node cancelled while kArmed is linked in the wheel, so cancel() pushes it
// on the notice queue, through the same `next` link: the worker's
// kQueued -> kArmed CAS comes after it popped the node, and once popped no
// producer writes the link again (worker/mpsc_queue.h), so a node is never in
// both queues. The worker's reference keeps a node alive while it sits in
// either queue: the worker drops it only after it has taken the node out of
// the wheel and, for a kArmed cancellation, out of the notice queue.
//
// The shared state outlives every call that reaches it: newTimeout() and a
// winning cancel() both hold a pending slot in SharedTimerState while they
// touch the queues (newTimeout() takes the slot before its push; cancel()
// pushes or settles its cell before it gives the slot back, with release),
// and stop() does not return before the slots sum to zero (acquire) and
// every lane is drained, so that a losing take-back has buried its cell. A
// cancel() or newTimeout() that comes after that finds the timer closed or
// the node no longer pending, and touches nothing shared.
//
// `deadline` and `where` (the wheel's position) are owned by the worker
// thread once the node has been published. `task()` belongs to the winner
// above; `next` to whichever queue holds the node, or it holds the lane cell.
//
// Memory ordering: the producer writes every field before pushing; the pending
// queue's release/acquire pair publishes them to the worker. State transitions
// use acq_rel so that the winner sees the task as the producer left it, and a
// reference drop is acq_rel so that the thread that deletes the node sees
// every other holder's writes.

#ifndef TICKWHEEL_WORKER_TIMEOUT_NODE_H_
#define TICKWHEEL_WORKER_TIMEOUT_NODE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/base/config.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/interleave.h"
#include "tickwheel/worker/task_slot.h"

namespace tickwheel::internal {

enum class TimeoutState : uint8_t {
  kQueued = 0,     // scheduled; in a lane or queue, not yet in the wheel
  kArmed = 1,      // scheduled; linked in the wheel by the worker
  kCancelled = 2,  // cancelled by cancel()
  kExpired = 3,    // the worker claimed it to run (it may be running now)
  // kCancelled, where a losing take-back's claim landed (CancelTakenBack):
  // reads as cancelled, and nothing leaves it.
  kCancelledAgain = 4,
  kStopped = 5,       // returned by stop(); the task is still inside
  kStoppedTaken = 6,  // returned by stop(); takeTask() moved the task out
  // A periodic timeout whose run is in progress on the worker thread, in the
  // worker's hands (not in the wheel); back to kArmed after the run.
  kRunning = 7,
};

// Nodes live in 64-byte cells of their own pool, one cache line each
// (chunks and cells are line-aligned): with its 8-byte wheel slot and its
// share of the chunk headers, a pending timeout costs about 72 bytes.
inline constexpr size_t kNodeCellSize = 64;
struct NodePoolTag;
using NodePool = CellPool<NodePoolTag, kNodeCellSize>;

// Reports more than TimeoutNode::kMaxRefs handles to one timeout and aborts.
[[noreturn]] void RefCountOverflow();

// A wait of a few cycles, then a yield of the CPU once it has gone on for a
// while: for waits on another thread's few stores.
void SpinPause(int spins);

struct TimeoutNode {
  // Up to this many references at once: handles plus the worker's. A program
  // that keeps more copies of one Timeout alive is stopped with a message
  // (the count would spill into the state byte).
  static constexpr uint32_t kMaxRefs = (uint32_t{1} << 23) - 1;

  // One 64-byte cell of NodePool (worker/cell_pool.h): no malloc header, and
  // an allocation and a free that are a thread-local list pop and push,
  // whichever thread drops the last reference. What the wheel touches sits
  // in the first 16 bytes (see `deadline`).
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

  // The word: bits 0-22 references held, bit 23 kInFlight, bits 24-27 the
  // TimeoutState, bits 28-31 the flags below.
  std::atomic<uint32_t> refs_state{Pack(0, TimeoutState::kQueued)};
  // A periodic run handed to the task executor is still in progress: the
  // next run is skipped rather than overlap it. Set by the worker, cleared
  // by the run's closure.
  static constexpr uint32_t kInFlight = uint32_t{1} << 23;
  // A thread is touching the mutable fields of a pending node: reset()
  // writing its deadline, or the worker taking a periodic run's reference
  // to the task and setting the next deadline. Held for a few stores, never
  // across user code. Nobody else writes the deadline, arms or claims the
  // node, or destroys its task while it is set (they wait), and stop()
  // waits for it before it collects the node, which keeps the timer's
  // shared state alive for the holder.
  static constexpr uint32_t kBusy = uint32_t{1} << 28;
  // The deadline moved since the worker filed the node: it re-reads it
  // before it expires or arms the node, and re-files it if it is later.
  static constexpr uint32_t kMoved = uint32_t{1} << 29;
  // The node is on (or about to be pushed on) its shard's notice queue; set
  // by whoever pushes, in the same RMW that decides the push, and cleared by
  // the worker when it pops. A node is on at most one queue at a time.
  static constexpr uint32_t kNoticed = uint32_t{1} << 30;
  // A periodic timeout; set when it is created, never cleared.
  static constexpr uint32_t kPeriodic = uint32_t{1} << 31;
  static constexpr uint32_t kStateBits = uint32_t{0xF} << 24;
  // Worker-only: where the wheel holds the node (see worker/wheel.h).
  static constexpr uint32_t kUnlinked = 0xF0000000u;
  uint32_t where = kUnlinked;

  // Worker-only: the deadline the wheel filed the node by (a clock reading),
  // which names its bucket (worker/wheel.h): `deadline` as it was when the
  // worker last filed the node. Here, in the first 16 bytes with the state
  // and `where`, because those are all the worker touches to file a node or
  // move it down a level: a 16-aligned 16-byte block never straddles a
  // cache line, so a transfer or a cascade costs one line per node.
  int64_t filed = 0;

  // When the timeout is due: a reading of the timer's clock, in nanoseconds
  // (saturating at INT64_MAX). Written by newTimeout() before it publishes
  // the node, then only by the holder of kBusy (reset(), or the worker
  // moving a periodic timeout to its next run); read by the worker (which
  // files the node by it) and by Timeout::deadline(). It differs from
  // `filed` after a reset() until the worker files the node again.
  std::atomic<int64_t> deadline{0};

  // Pending-queue link; while the node sits in a fast lane, its cell's
  // address, tagged (LaneCell()); once the worker has armed the node, the
  // notice queue's link.
  std::atomic<TimeoutNode*> next{nullptr};

  // The callable, in 24 bytes (worker/task_slot.h).
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

  static constexpr uint32_t Pack(uint32_t refs, TimeoutState s) {
    return refs | uint32_t{static_cast<uint8_t>(s)} << 24;
  }
  static constexpr TimeoutState StateOf(uint32_t word) {
    return static_cast<TimeoutState>((word >> 24) & 0xF);
  }
  static constexpr uint32_t WithState(uint32_t word, TimeoutState s) {
    return (word & ~kStateBits) | Pack(0, s);
  }
  bool periodic() const {
    return (refs_state.load(std::memory_order_relaxed) & kPeriodic) != 0;
  }

  // The word once no thread holds kBusy (acquire: the holder's stores are
  // visible). Spins, then yields: the holder only stores.
  uint32_t LoadNotBusy() const {
    uint32_t w = refs_state.load(std::memory_order_acquire);
    for (int spins = 0; w & kBusy; ++spins) {
      SpinPause(spins);
      w = refs_state.load(std::memory_order_acquire);
    }
    return w;
  }

  // Takes kBusy if the state is one `ok` accepts, waiting for another
  // holder first: true, with `*before` the word it replaced (kBusy clear);
  // false when the state is not acceptable.
  template <typename Ok>
  bool AcquireBusy(Ok ok, uint32_t* before) {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    for (int spins = 0;;) {
      if (!ok(StateOf(w))) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return false;
      }
      if (w & kBusy) {
        SpinPause(spins);
        ++spins;
        w = refs_state.load(std::memory_order_relaxed);
        continue;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (refs_state.compare_exchange_weak(w, w | kBusy,
                                           std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        *before = w;
        return true;
      }
    }
  }

  // Drops kBusy, clearing `clear` and setting `set` in the same RMW (release:
  // what the holder stored is visible to whoever sees kBusy clear). Returns
  // the word it replaced.
  uint32_t ReleaseBusy(uint32_t clear, uint32_t set) {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    TICKWHEEL_INTERLEAVE_POINT();
    while (!refs_state.compare_exchange_weak(w, (w & ~(kBusy | clear)) | set,
                                             std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
    return w;
  }

  TimeoutState state() const {
    return StateOf(refs_state.load(std::memory_order_acquire));
  }

  // One CAS loop: moves the state to `to` if `may_leave(state)` holds, and
  // returns the state it found (the one it left, or the one that stopped
  // it). Retries only when a reference changed meanwhile.
  template <typename Pred>
  TimeoutState TransitionIf(Pred may_leave, TimeoutState to) {
    uint32_t word = refs_state.load(std::memory_order_relaxed);
    while (may_leave(StateOf(word))) {
      TICKWHEEL_INTERLEAVE_POINT();
      if (refs_state.compare_exchange_weak(word, WithState(word, to),
                                           std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return StateOf(word);
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    return StateOf(word);
  }

  // For a cancel() that has just taken the node back out of its lane cell
  // and with it the worker's reference: one XADD moves the state up by
  // kCancelled - kQueued and drops that reference. Only another cancel() can
  // have moved the state since the take-back (expiry and stop() reach a node
  // only after popping it, and it is no longer in the lane), so the add
  // lands on kQueued, and the caller has won (true), or on kCancelled, and
  // makes kCancelledAgain: still cancelled, the reference dropped all the
  // same, and the caller has lost (false). A copy or a drop of a handle may
  // change the count meanwhile; an add, unlike a load and a store, keeps it.
  bool CancelTakenBack() {
    constexpr uint32_t kClaim =
        Pack(0, TimeoutState::kCancelled) - Pack(0, TimeoutState::kQueued) - 1;
    static_assert(Pack(0, TimeoutState::kCancelled) + kClaim + 1 ==
                      Pack(0, TimeoutState::kCancelledAgain),
                  "a late claim must land on kCancelledAgain");
    const uint32_t old =
        refs_state.fetch_add(kClaim, std::memory_order_acq_rel);
    return StateOf(old) == TimeoutState::kQueued;
  }

  // The worker arming a node it popped from a lane or queue: kQueued ->
  // kArmed, clearing kMoved (it files the node by the deadline it reads
  // next). Waits while a reset() holds kBusy. False if the node was
  // cancelled while queued. A node nobody holds a handle to (and so nobody
  // can reset or cancel) is armed with a plain store.
  bool Arm() {
    uint32_t w = refs_state.load(std::memory_order_acquire);
    if (w == Pack(1, TimeoutState::kQueued)) {
      TICKWHEEL_INTERLEAVE_POINT();
      refs_state.store(Pack(1, TimeoutState::kArmed),
                       std::memory_order_relaxed);
      return true;
    }
    for (int spins = 0;; ++spins) {
      if (StateOf(w) != TimeoutState::kQueued) return false;
      if (w & kBusy) {
        SpinPause(spins);
        w = refs_state.load(std::memory_order_acquire);
        continue;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (refs_state.compare_exchange_weak(
              w, WithState(w & ~kMoved, TimeoutState::kArmed),
              std::memory_order_acq_rel, std::memory_order_acquire)) {
        return true;
      }
    }
  }

  // TransitionIf for one state: true if it moved the state from `from`.
  bool Transition(TimeoutState from, TimeoutState to) {
    return TransitionIf([from](TimeoutState s) { return s == from; }, to) ==
           from;
  }

  void Ref() {
    TICKWHEEL_INTERLEAVE_POINT();
    const uint32_t old = refs_state.fetch_add(1, std::memory_order_relaxed);
    if ((old & kMaxRefs) == kMaxRefs) RefCountOverflow();
  }

  // True if the caller's reference is the only one. Then no other thread
  // holds a reference or can gain one (that takes holding one), and the
  // acquire load reads the end of the chain of acq_rel decrements, so the
  // caller sees every former holder's writes and may delete without an RMW.
  bool SoleHolder() const {
    return (refs_state.load(std::memory_order_acquire) & kMaxRefs) == 1;
  }

  // Drops one reference; the last one deletes the node (and any task in it).
  void Unref() {
    TICKWHEEL_INTERLEAVE_POINT();
    if (SoleHolder() ||
        (refs_state.fetch_sub(1, std::memory_order_acq_rel) & kMaxRefs) == 1) {
      delete this;
    }
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

// A pending timeout costs one 64-byte cell, plus its 8-byte slot in a wheel
// bucket.
static_assert(sizeof(TimeoutNode) <= kNodeCellSize,
              "TimeoutNode outgrew its pool cell");
// What filing a node reads and writes shares one cache line (see filed).
static_assert(offsetof(TimeoutNode, filed) + sizeof(int64_t) <= 16 &&
                  offsetof(TimeoutNode, where) < 16,
              "the fields a transfer or cascade touches left the first 16 "
              "bytes");

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_TIMEOUT_NODE_H_
