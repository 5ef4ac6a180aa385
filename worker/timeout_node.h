// worker/timeout_node.h
// -----------------------------------------------------------------------------
// Internal. The heap object behind a Timeout handle: its task, its deadline,
// its place in the wheel, and the state machine that decides which of
// cancel(), expiry and stop() gets it. The producer-side state it refers to
// is worker/shared_state.h.
//
// The file is longer than most on purpose: the table of transitions below
// and every operation on the word, each with its memory-ordering argument,
// are kept in the one file that whoever changes an operation has open.
// docs/DESIGN.md tells the story around them.
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
// The reference count, the state and the flags share one atomic word
// (`refs_state`; the layout is at the word below), so that a claim and a
// reference drop can be one RMW. Every change of the word is an RMW whose
// result decides, with two exceptions whose precondition no other thread can
// break: initialisation before the node is published, and the worker's arm
// and expiry claim of a node nobody holds a handle to (refs == 1: nobody
// can reset, cancel or copy it). Every step is an operation below, named in
// this table; no other code changes the word.
//
//   from        to           who          operation, and why nothing races it
//   ----------  -----------  -----------  -----------------------------------
//   (new)       kQueued,2    newTimeout   StartQueued(): a plain store before
//                                         the node is published.
//   kQueued     kArmed       worker       Arm(), after popping the node from
//                                         its lane or queue; waits for kBusy.
//   kArmed      kExpired     worker       ClaimToRun(limit): only if the
//               (one-shot)                deadline, read in the same claim,
//                                         is at or before `limit`; else
//                                         kNotDue and the worker files the
//                                         node again. See "Never early".
//   kArmed      kRunning     worker       ClaimToRun() of a periodic node run
//               +kBusy       (inline      on the worker: out of the wheel for
//                            periodic)    the run. ReleaseForRun() drops kBusy
//                                         once the run holds its own
//                                         reference to the callable;
//                                         EndInlineRun() takes it back and
//                                         returns the node to kArmed at its
//                                         next run (or the deadline a reset()
//                                         set during the run), unless a
//                                         cancel() made the run the last.
//   kArmed      +kBusy       worker       ClaimToRun() of a periodic node with
//               +kInFlight   (executor    a task_executor: the node stays
//                            periodic)    armed and filed; ScheduleNextRun()
//                                         stores its next run and drops kBusy;
//                                         EndExecutorRun() clears kInFlight
//                                         when the executor is done. A run
//                                         due while kInFlight is set is
//                                         kSkipped (kBusy only, then
//                                         ScheduleNextRun(): the next run,
//                                         or the same deadline again when
//                                         the run waits: MissedRuns).
//   kQueued     kCancelled   cancel()     CancelTakenBack(), after taking the
//               (refs - 1)   (take-back   node back out of its lane cell (which
//                            first)       makes the caller the holder of the
//                                         worker's reference): one XADD moves
//                                         the state and drops that reference.
//                                         Only another cancel() can have moved
//                                         the state meanwhile (expiry and
//                                         stop() need the node popped); then
//                                         the XADD lands on kCancelled, makes
//                                         kCancelledAgain (cancelled, with no
//                                         way out) and the caller lost.
//   kQueued,    kCancelled   cancel()     ClaimCancel(): CAS. The winner
//   kArmed,                               destroys the task once kBusy is
//   kRunning                              clear (WaitNotBusy()); for kArmed it
//                                         pushes the node on the notice queue
//                                         (kNoticed, set in the same CAS)
//                                         unless a reset() did; for kRunning
//                                         the worker sees it in EndInlineRun();
//                                         for kQueued it tries the take-back.
//   kQueued,    kCancelled   cancelAll()  ClaimCancelAll(): CAS, by the worker
//   kArmed,                  (worker)     (cancelAll() from another thread asks
//   kRunning                              it and waits). No notice: the worker
//                                         unlinks what it cancels itself.
//                                         Passes library timeouts by.
//   kQueued,    kStopped     stop()       ClaimForStop(): CAS once kBusy is
//   kArmed                                clear, after the worker has been
//                                         joined and the node popped.
//   kStopped    kStoppedTaken takeTask()  TakeStopped(): CAS, one winner.
//
// reset() and periodic runs never change the state of a node that someone
// else may claim; they hold the kBusy flag instead:
//
//   flag       set by                what it means
//   ---------  --------------------  ----------------------------------------
//   kBusy      BeginReset(); the     the holder alone writes `deadline`; a
//              worker's periodic     claim that lands meanwhile (arm, expiry,
//              claims                cancel(), cancelAll(), stop()) waits for
//                                    it before it touches the task or the
//                                    deadline. Dropped by one release RMW
//                                    (EndReset(), ReleaseForRun(),
//                                    ScheduleNextRun(), EndInlineRun()).
//   kMoved     EndReset(), with      the deadline changed since the worker
//              kBusy's drop          filed the node; cleared by the worker
//                                    when it reads the deadline again: Arm(),
//                                    TakeNotice(), ClaimToRun(),
//                                    ScheduleNextRun(), EndInlineRun().
//   kNoticed   ClaimCancel() or      the node is on its shard's notice
//              MarkNoticed() (a      queue: set in the RMW that decides the
//              reset() earlier),     push (only on a kArmed node), so it is
//              on a kArmed node      pushed once; cleared by TakeNotice().
//   kInFlight  ClaimToRun()          a periodic run handed to the executor is
//                                    still in progress (above).
//   kPeriodic  StartQueued()         made by newPeriodic(); never cleared.
//   kLibrary   StartQueued()         scheduled by one of tickwheel's own
//                                    components (the idle tracker) on an
//                                    application's Timer: cancelAll() passes
//                                    it by and stop() does not return it.
//
//   refs + 1   Ref()                 fetch_add: never a store.
//   refs - 1   Unref()               fetch_sub, or, when the caller's
//                                    reference is the only one (refs == 1),
//                                    delete without an RMW: nobody else holds
//                                    or can gain one.
//
// So exactly one of cancel(), expiry and stop() wins each node: a cancel
// that races an expiry returns true only if it won, in which case the task
// never runs. The winner alone may touch the task afterwards (cancel()
// destroys it, the worker runs it, stop() hands it to takeTask()).
//
// Never early
//   The worker claims a node to run it with ClaimToRun(limit), where `limit`
//   is the clock reading of the pass, or the end of the tick being processed
//   if that is earlier. The claim reads the deadline and moves the state in
//   one CAS loop, and first clears kMoved: with kMoved clear in the word the
//   CAS expects, a reset() that lands between the read and the CAS makes the
//   CAS fail (it sets kBusy, and leaves kMoved set), so the deadline the
//   claim compares with `limit` is the one the node holds when it is claimed.
//   A deadline past the limit is kNotDue: the worker files the node again by
//   it. Once claimed, no reset() can succeed. This holds on every path that
//   runs a task: the tick pass, the pass within a tick, overdue nodes taken
//   from the queues, periodic runs inline and on an executor.
//
// Who tells the worker about a cancellation: a node cancelled while kQueued
// is still in its shard's lane or pending queue. In the lane, cancel() takes
// it back (worker/lane.h) together with the worker's reference, unless the
// worker took the cell first; in the queue, or when the take-back fails, the
// worker finds it cancelled (Arm() fails) and drops its reference. The taker
// settles the emptied cell: it goes back to the ring (Unclaim) if it is
// still its lane's last claimed one, so that a schedule-then-cancel loop
// reuses one cell and the worker has nothing to drain; any other cell gets a
// tombstone (Bury), which the worker skips. A take-back that loses the state
// to another cancel() buries its cell and drops the worker's reference
// itself. The take-back may come after the timer is gone; lane arrays are
// type-stable (worker/lane_arrays.h), so the CAS then fails harmlessly.
//
// A node cancelled while kArmed is linked in the wheel, so cancel() pushes it
// on the notice queue, through the same `next` link: the worker's Arm()
// comes after it popped the node, and once popped no producer writes the
// link again (worker/mpsc_queue.h), so a node is never in both queues. The
// worker's reference keeps a node alive while it sits in either queue.
//
// The shared state outlives every call that reaches it: newTimeout() and a
// winning cancel() both hold a pending slot in SharedTimerState while they
// touch the queues, a reset() holds kBusy on a pending node, and stop() does
// not return before the slots sum to zero, every lane is drained and every
// node it collects has kBusy clear. A call that comes after that finds the
// timer closed or the node no longer pending, and touches nothing shared.
//
// `deadline` is written by newTimeout() before the node is published, then
// only by the holder of kBusy; `filed` and `where` are the worker's; the
// task belongs to the winner above; `next` to whichever queue holds the
// node, or it holds the lane cell.
//
// Memory ordering: the producer writes every field before pushing; the
// pending queue's release/acquire pair publishes them to the worker. State
// transitions are acq_rel, so that the winner sees the task as the producer
// left it, and a claim that reads kBusy clear (acquire) sees the deadline its
// last holder stored before the release that dropped it. A reference drop is
// acq_rel, so that the thread that deletes the node sees every other
// holder's writes.

#ifndef TICKWHEEL_WORKER_TIMEOUT_NODE_H_
#define TICKWHEEL_WORKER_TIMEOUT_NODE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/base/config.h"
#include "tickwheel/base/interleave.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/cell_pool.h"

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
  // (the count would spill into the flags).
  static constexpr uint32_t kMaxRefs = (uint32_t{1} << 22) - 1;

  // One 64-byte cell of NodePool (worker/cell_pool.h): no malloc header, and
  // an allocation and a free that are a thread-local list pop and push,
  // whichever thread drops the last reference. What the wheel touches sits
  // in the first 16 bytes (see `filed`).
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

  // The word: bits 0-21 references held, bit 22 kLibrary, bit 23 kInFlight,
  // bits 24-27 the TimeoutState, bits 28-31 kBusy, kMoved, kNoticed,
  // kPeriodic. Each flag is described in the table above.
  std::atomic<uint32_t> refs_state{Pack(0, TimeoutState::kQueued)};
  static constexpr uint32_t kLibrary = uint32_t{1} << 22;
  static constexpr uint32_t kInFlight = uint32_t{1} << 23;
  static constexpr uint32_t kBusy = uint32_t{1} << 28;
  static constexpr uint32_t kMoved = uint32_t{1} << 29;
  static constexpr uint32_t kNoticed = uint32_t{1} << 30;
  static constexpr uint32_t kPeriodic = uint32_t{1} << 31;
  static constexpr uint32_t kStateBits = uint32_t{0xF} << 24;
  static_assert((kMaxRefs & (kLibrary | kInFlight | kStateBits)) == 0);
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
  // files the node by it and claims it against it) and by
  // Timeout::deadline(). It differs from `filed` after a reset() until the
  // worker files the node again.
  std::atomic<int64_t> deadline{0};

  // Pending-queue link; while the node sits in a fast lane, its cell's
  // address, tagged (LaneCell()); once the worker has armed the node, the
  // notice queue's link. A LocalTimer's node holds its owner thread's tag
  // (OwnerTag()) from Schedule() until a notice first takes it through the
  // queue.
  std::atomic<TimeoutNode*> next{nullptr};

  // The calling thread's tag for `next`: the address of a thread-local
  // object, with bit 0 set. No node (a queue's own sentinel included) and
  // no lane cell is at that address, so it never equals a link or a tagged
  // cell, and no two live threads
  // share it. A cancel() that finds its own thread's tag in an armed node
  // runs on that node's LocalTimer's owner thread (worker/local_engine.h).
  static TimeoutNode* OwnerTag() {
    static thread_local char tag;
    return reinterpret_cast<TimeoutNode*>(reinterpret_cast<uintptr_t>(&tag) |
                                          1);
  }
  // Whether this thread drives the LocalTimer of this armed node: `next`
  // holds its tag and the state is kArmed (a relaxed look; the claim
  // decides). Then the engine is alive: only its owner could have
  // destroyed it on this thread, and that would have stopped the node
  // first.
  bool OwnedByThisThread() const {
    return next.load(std::memory_order_relaxed) == OwnerTag() &&
           StateOf(refs_state.load(std::memory_order_relaxed)) ==
               TimeoutState::kArmed;
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

  static constexpr uint32_t Pack(uint32_t refs, TimeoutState s) {
    return refs | uint32_t{static_cast<uint8_t>(s)} << 24;
  }
  static constexpr TimeoutState StateOf(uint32_t word) {
    return static_cast<TimeoutState>((word >> 24) & 0xF);
  }
  static constexpr uint32_t WithState(uint32_t word, TimeoutState s) {
    return (word & ~kStateBits) | Pack(0, s);
  }
  // Scheduled, and not yet run to the end, cancelled or stopped: a state
  // that cancel(), reset() and cancelAll() may leave.
  static constexpr bool Pending(TimeoutState s) {
    return s == TimeoutState::kQueued || s == TimeoutState::kArmed ||
           s == TimeoutState::kRunning;
  }

  TimeoutState state() const {
    return StateOf(refs_state.load(std::memory_order_acquire));
  }
  bool periodic() const {
    return (refs_state.load(std::memory_order_relaxed) & kPeriodic) != 0;
  }
  bool library() const {
    return (refs_state.load(std::memory_order_relaxed) & kLibrary) != 0;
  }
  // A periodic run handed to the executor is still in progress (kInFlight).
  // A hint for where to file the node: the executor's thread clears the flag
  // at any moment, and only ClaimToRun() decides.
  bool RunInFlight() const {
    return (refs_state.load(std::memory_order_relaxed) & kInFlight) != 0;
  }

  // ---- The protocol's operations, one per row of the table. ----

  // (new) -> kQueued with two references, the handle's and the worker's.
  void StartQueued(bool periodic, bool library) {
    refs_state.store(Pack(2, TimeoutState::kQueued) |
                         (periodic ? kPeriodic : 0) | (library ? kLibrary : 0),
                     std::memory_order_relaxed);
  }

  // The worker, after popping the node from a lane or queue: kQueued ->
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

  // What ClaimToRun() found.
  enum class ClaimOutcome : uint8_t {
    // The worker owns this run: a one-shot node is kExpired; a periodic one
    // is kRunning with kBusy (inline) or keeps kArmed with kBusy and
    // kInFlight (executor).
    kClaimed,
    // A periodic node whose previous run is still in flight on the
    // executor: this run is skipped; the worker holds kBusy to store the
    // next one (ScheduleNextRun()).
    kSkipped,
    // Its deadline is past the limit (a reset() moved it): nothing changed
    // but kMoved, now clear; the worker files it again by `deadline`.
    kNotDue,
    // No longer armed (cancel() or cancelAll() won): the worker drops its
    // reference unless `word` has kNoticed (then the notice queue's pop
    // does).
    kLost,
  };
  struct Claim {
    ClaimOutcome outcome;
    uint32_t word;     // the word the claim replaced, or found
    int64_t deadline;  // the deadline the claim went by
  };

  // The worker claims an armed node to run it, if its deadline is at or
  // before `limit` (see "Never early"). `executor`: periodic runs go to the
  // task executor. Waits while another thread holds kBusy.
  Claim ClaimToRun(int64_t limit, bool executor) {
    uint32_t w = refs_state.load(std::memory_order_acquire);
    if (w == Pack(1, TimeoutState::kArmed)) [[likely]] {
      // A one-shot node nobody holds a handle to: nothing can race.
      const int64_t d = deadline.load(std::memory_order_relaxed);
      if (d > limit) return {ClaimOutcome::kNotDue, w, d};
      TICKWHEEL_INTERLEAVE_POINT();
      refs_state.store(Pack(1, TimeoutState::kExpired),
                       std::memory_order_relaxed);
      return {ClaimOutcome::kClaimed, w, d};
    }
    for (int spins = 0;; ++spins) {
      if (StateOf(w) != TimeoutState::kArmed) {
        return {ClaimOutcome::kLost, w, 0};
      }
      if (w & kBusy) {
        SpinPause(spins);
        w = refs_state.load(std::memory_order_acquire);
        continue;
      }
      if (w & kMoved) {
        // Take the news in first, so that the CAS below fails on any
        // reset() that lands after the deadline is read.
        if (!refs_state.compare_exchange_weak(w, w & ~kMoved,
                                              std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
          continue;
        }
        w &= ~kMoved;
      }
      const int64_t d = deadline.load(std::memory_order_relaxed);
      if (d > limit) return {ClaimOutcome::kNotDue, w, d};
      TICKWHEEL_INTERLEAVE_POINT();
      ClaimOutcome outcome = ClaimOutcome::kClaimed;
      uint32_t want;
      if (!(w & kPeriodic)) {
        want = WithState(w, TimeoutState::kExpired);
      } else if (!executor) {
        want = WithState(w, TimeoutState::kRunning) | kBusy;
      } else if (w & kInFlight) {
        want = w | kBusy;
        outcome = ClaimOutcome::kSkipped;
      } else {
        want = w | kBusy | kInFlight;
      }
      if (refs_state.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return {outcome, w, d};
      }
    }
  }

  // The worker, holding kBusy after a periodic ClaimToRun() with an
  // executor (or a skipped run): stores the next run and drops kBusy and
  // kMoved, with the node still armed and about to be filed by it.
  void ScheduleNextRun(int64_t next_run) {
    deadline.store(next_run, std::memory_order_relaxed);
    ReleaseBusy(kMoved, 0);
  }
  // The worker, before an inline periodic run: drops kBusy, which it held
  // while it took the run's own reference to the callable.
  void ReleaseForRun() { ReleaseBusy(0, 0); }
  // The worker, after an inline periodic run: kRunning -> kArmed at
  // `next_run`, or at the deadline a reset() set during the run (kMoved),
  // clearing kMoved. True: the node is to be filed again. False: a cancel()
  // made the run the last (or cancelAll() did); *word tells DropCancelled
  // whether a notice queue holds the node.
  bool EndInlineRun(int64_t next_run, uint32_t* word) {
    uint32_t before;
    if (!AcquireBusy([](TimeoutState s) { return s == TimeoutState::kRunning; },
                     &before)) {
      *word = refs_state.load(std::memory_order_acquire);
      return false;
    }
    if (!(before & kMoved)) {
      deadline.store(next_run, std::memory_order_relaxed);
    }
    // Holding kBusy, only a cancel() can move the state meanwhile.
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    while (true) {
      const bool still = StateOf(w) == TimeoutState::kRunning;
      const uint32_t want =
          (still ? WithState(w, TimeoutState::kArmed) : w) & ~(kBusy | kMoved);
      if (refs_state.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        *word = w;
        return still;
      }
    }
  }
  // The executor's run of a periodic node is over (its closure went).
  void EndExecutorRun() {
    refs_state.fetch_and(~kInFlight, std::memory_order_release);
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
    TICKWHEEL_INTERLEAVE_POINT();
    const uint32_t old =
        refs_state.fetch_add(kClaim, std::memory_order_acq_rel);
    return StateOf(old) == TimeoutState::kQueued;
  }

  // What ClaimCancel() did.
  struct CancelClaim {
    bool won;
    TimeoutState left;  // the state it moved from (when won)
    bool push;          // the caller must push the node on the notice queue
  };
  // cancel(): a pending state -> kCancelled, setting kNoticed when it leaves
  // kArmed and no notice is on its way (then the caller pushes). The winner
  // destroys the task after WaitNotBusy().
  CancelClaim ClaimCancel() {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    for (;;) {
      const TimeoutState left = StateOf(w);
      if (!Pending(left)) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return {false, left, false};
      }
      const bool push = left == TimeoutState::kArmed && !(w & kNoticed);
      const uint32_t want =
          WithState(w, TimeoutState::kCancelled) | (push ? kNoticed : 0);
      TICKWHEEL_INTERLEAVE_POINT();
      if (refs_state.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        return {true, left, push};
      }
    }
  }

  // cancel() on a LocalTimer's owner thread of a node its wheel holds
  // (worker/local_engine.h): kArmed -> kCancelled, dropping the engine's
  // reference in the same CAS, since the caller unlinks the node at once. Only
  // a plainly armed node: with kNoticed a notice is on its way and holds that
  // reference; kBusy cannot be held by another thread (reset() is an owner
  // call, periodic runs happen in advance()), but is left to the general path
  // all the same. The caller's handle holds a reference, so the count stays
  // above zero. kElsewhere: nothing done, use ClaimCancel().
  enum class OwnerClaim { kWon, kLost, kElsewhere };
  OwnerClaim ClaimCancelOnOwner() {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    for (;;) {
      const TimeoutState state = StateOf(w);
      if (!Pending(state)) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return OwnerClaim::kLost;
      }
      if (state != TimeoutState::kArmed || (w & (kNoticed | kBusy))) {
        return OwnerClaim::kElsewhere;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (refs_state.compare_exchange_weak(
              w, WithState(w, TimeoutState::kCancelled) - 1,
              std::memory_order_acq_rel, std::memory_order_relaxed)) {
        return OwnerClaim::kWon;
      }
    }
  }

  // A LocalTimer's Schedule(), before the handle is returned: no other
  // thread can reach the node, so kQueued -> kArmed is a plain store.
  void ArmUnpublished() {
    const uint32_t w = refs_state.load(std::memory_order_relaxed);
    refs_state.store(WithState(w, TimeoutState::kArmed),
                     std::memory_order_relaxed);
  }

  // cancelAll() on the worker: a pending state -> kCancelled, without a
  // notice (the worker unlinks what it cancels itself). Library timeouts
  // are passed by. True if this call cancelled it; then it waits for kBusy
  // to clear, so that the caller may destroy the task. *word: the word it
  // replaced or found.
  bool ClaimCancelAll(uint32_t* word) {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    for (;;) {
      if (!Pending(StateOf(w)) || (w & kLibrary)) {
        *word = w;
        return false;
      }
      if (refs_state.compare_exchange_weak(
              w, WithState(w, TimeoutState::kCancelled),
              std::memory_order_acq_rel, std::memory_order_relaxed)) {
        break;
      }
    }
    *word = w;
    WaitNotBusy();  // a reset() may still be storing its deadline
    return true;
  }

  // stop(), once the worker has been joined and the node popped: `from`
  // (kQueued or kArmed) -> kStopped, after any kBusy holder has let go (a
  // reset() in progress finishes first: it may still use the shared state).
  // False if it was cancelled meanwhile; *word is the word then.
  bool ClaimForStop(TimeoutState from, uint32_t* word) {
    uint32_t w = LoadNotBusy();
    for (;;) {
      if (StateOf(w) != from) {
        *word = w;
        return false;
      }
      if (w & kBusy) {
        w = LoadNotBusy();
        continue;
      }
      if (refs_state.compare_exchange_weak(
              w, WithState(w, TimeoutState::kStopped),
              std::memory_order_acq_rel, std::memory_order_acquire)) {
        *word = w;
        return true;
      }
    }
  }

  // takeTask(), or the discard of a stopped node: kStopped -> kStoppedTaken;
  // of racing calls one wins.
  bool TakeStopped() {
    return TransitionIf(
               [](TimeoutState s) { return s == TimeoutState::kStopped; },
               TimeoutState::kStoppedTaken) == TimeoutState::kStopped;
  }

  // reset(): takes kBusy if the node is pending (true), waiting for another
  // holder first; then the caller alone writes `deadline`, and ends with
  // EndReset(). False, changing nothing, when it is not pending.
  bool BeginReset() {
    uint32_t before;
    return AcquireBusy(Pending, &before);
  }
  // The holder of kBusy in reset(), moving the deadline earlier: sets
  // kNoticed on an armed node that does not have it. True if this call set
  // it, and so must push the node on the notice queue. (A cancel() that won
  // meanwhile set it and pushed already; a node that is not armed is not
  // filed, and the worker reads its deadline when it files it.)
  bool MarkNoticed() {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    while (StateOf(w) == TimeoutState::kArmed && !(w & kNoticed)) {
      if (refs_state.compare_exchange_weak(w, w | kNoticed,
                                           std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }
  // Ends a reset(): drops kBusy and sets kMoved, in one release RMW.
  void EndReset() { ReleaseBusy(0, kMoved); }

  // The worker, popping the node from a notice queue: clears kNoticed (and,
  // for an armed node, kMoved, since the worker files it by its deadline
  // now), once no thread holds kBusy. Returns the word it replaced.
  uint32_t TakeNotice() {
    uint32_t w = LoadNotBusy();
    for (;;) {
      uint32_t want = w & ~kNoticed;
      if (StateOf(w) == TimeoutState::kArmed) want &= ~kMoved;
      if (refs_state.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
        return w;
      }
      if (w & kBusy) w = LoadNotBusy();
    }
  }

  // Returns once no thread holds kBusy (acquire: the holder's stores are
  // visible).
  void WaitNotBusy() const { LoadNotBusy(); }

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

 private:
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
  // what the holder stored is visible to whoever sees kBusy clear).
  void ReleaseBusy(uint32_t clear, uint32_t set) {
    uint32_t w = refs_state.load(std::memory_order_relaxed);
    TICKWHEEL_INTERLEAVE_POINT();
    while (!refs_state.compare_exchange_weak(w, (w & ~(kBusy | clear)) | set,
                                             std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
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
