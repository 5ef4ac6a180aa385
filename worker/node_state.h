// worker/node_state.h
// -----------------------------------------------------------------------------
// Internal. The timeout node's protocol: one atomic word of references, state
// and flags, the deadline kBusy guards, and every operation on the word, each
// named, with its memory-ordering argument. Nothing else touches the word; the
// rest of the node is worker/timeout_node.h; docs/DESIGN.md tells the story.
//
// Ground rules. A node lives while anyone holds a reference: each Timeout
// handle one, the worker one from newTimeout() until it is done with the node.
// A handle may be used by several threads at once, so no step assumes the
// caller's reference is the only one. Every change of the word is an RMW whose
// result decides, but initialisation before the node is published and the
// worker's arm and expiry claim of a node nobody holds a handle to (refs == 1:
// nobody can reset, cancel or copy it), which are plain stores.
//
//   from     to             who                operation
//   -------  -------------  -----------------  ----------------------------
//   (new)    kQueued,2      newTimeout()       StartQueued()
//   kQueued  kArmed         worker             Arm()
//   kArmed   kExpired       worker, one-shot   ClaimToRun(limit): deadline
//                                              <= limit ("Never early")
//   kArmed   kRunning+kBusy worker, periodic   ClaimToRun(); ReleaseForRun(),
//                           inline             EndInlineRun()
//   kArmed   +kBusy         worker, periodic   ClaimToRun(); ScheduleNextRun(),
//            +kInFlight     on an executor     EndExecutorRun()
//   kQueued  kCancelled     cancel(), taken    ClaimCancel(): one XADD, that
//            (refs - 1)     back from a lane   drops the worker's reference
//   pending  kCancelled     cancel()           ClaimCancel(): CAS, +kNoticed
//                                              from kArmed (push a notice)
//   kArmed   kCancelled     cancel() on the    ClaimCancelOnOwner()
//            (refs - 1)     owner thread
//   pending  kCancelled     cancelAll()        ClaimCancelAll(), not kLibrary
//   kQueued, kStopped       stop()             ClaimForStop()
//   kArmed
//   kStopped kStoppedTaken  takeTask()         TakeStopped(): one winner
//
// "pending" is kQueued, kArmed or kRunning. So exactly one of cancel(), expiry
// and stop() wins each node, and the winner alone touches the task afterwards
// (cancel() destroys it, the worker runs it, stop() hands it to takeTask()).
//
// reset() and periodic runs never change the state of a node that someone
// else may claim; they hold flags instead:
//   kBusy      BeginReset(), the worker's periodic claims: the holder alone
//              writes `deadline`; every claim waits for it before it touches
//              the task or the deadline. Dropped by one release RMW.
//   kMoved     EndReset(): the deadline changed since the worker filed the
//              node; cleared where the worker reads it again.
//   kNoticed   ClaimCancel() or MarkNoticed(), on a kArmed node only: it is
//              on a notice queue, pushed once; cleared by TakeNotice().
//   kInFlight  ClaimToRun(): an executor's periodic run is in progress.
//   kPeriodic, kLibrary  StartQueued(): newPeriodic(); one of tickwheel's
//              own timeouts (cancelAll() passes it by, stop() keeps it).
//
// Never early. The worker claims with ClaimToRun(limit), `limit` being the
// pass's clock reading or the end of the tick being processed if earlier. The
// claim first clears kMoved, then reads the deadline and moves the state in
// one CAS that expects kMoved clear, so a reset() landing between the read and
// the CAS (it sets kBusy, then kMoved) makes the CAS fail: the deadline
// compared with `limit` is the one the node holds when it is claimed.
//
// Memory ordering. The producer writes every field before it publishes the
// node; the lane's or queue's release/acquire pair hands them to the worker.
// Transitions are acq_rel, so the winner sees the task as its producer left
// it, and a claim that reads kBusy clear (acquire) sees the deadline the last
// holder stored before the release that dropped it; reset() stores it with
// release after taking kBusy (TimeoutNode::UnmovedDeadline() relies on it).
// Reference drops are acq_rel: whoever deletes sees every holder's writes.

#ifndef TICKWHEEL_WORKER_NODE_STATE_H_
#define TICKWHEEL_WORKER_NODE_STATE_H_

#include <atomic>
#include <cstdint>

#include "tickwheel/base/interleave.h"

namespace tickwheel::internal {

enum class TimeoutState : uint8_t {
  kQueued = 0,     // scheduled; in a lane or queue, not yet in the wheel
  kArmed = 1,      // scheduled; linked in the wheel by the worker
  kCancelled = 2,  // cancelled
  kExpired = 3,    // the worker claimed it to run (it may be running now)
  // A losing take-back's XADD on kCancelled: cancelled, and nothing leaves.
  kCancelledAgain = 4,
  kStopped = 5,       // returned by stop(); the task is still inside
  kStoppedTaken = 6,  // returned by stop(); takeTask() moved the task out
  // A periodic run in progress on the worker, out of the wheel; then kArmed.
  kRunning = 7,
};

// Reports more than NodeState::kMaxRefs handles to one timeout and aborts.
[[noreturn]] void RefCountOverflow();
// A pause of a few cycles, a yield once a wait on a few stores goes on.
void SpinPause(int spins);

class NodeState {
 public:
  // Up to this many references at once (RefCountOverflow() beyond).
  static constexpr uint32_t kMaxRefs = (uint32_t{1} << 22) - 1;
  // The word: bits 0-21 references, 22 kLibrary, 23 kInFlight, 24-27 the
  // TimeoutState, 28-31 kBusy, kMoved, kNoticed, kPeriodic.
  static constexpr uint32_t kLibrary = uint32_t{1} << 22;
  static constexpr uint32_t kInFlight = uint32_t{1} << 23;
  static constexpr uint32_t kBusy = uint32_t{1} << 28;
  static constexpr uint32_t kMoved = uint32_t{1} << 29;
  static constexpr uint32_t kNoticed = uint32_t{1} << 30;
  static constexpr uint32_t kPeriodic = uint32_t{1} << 31;
  static constexpr uint32_t kStateBits = uint32_t{0xF} << 24;
  static_assert((kMaxRefs & (kLibrary | kInFlight | kStateBits)) == 0);

  static constexpr uint32_t Pack(uint32_t refs, TimeoutState s) {
    return refs | uint32_t{static_cast<uint8_t>(s)} << 24;
  }
  static constexpr TimeoutState StateOf(uint32_t word) {
    return static_cast<TimeoutState>((word >> 24) & 0xF);
  }
  static constexpr uint32_t WithState(uint32_t word, TimeoutState s) {
    return (word & ~kStateBits) | Pack(0, s);
  }
  static constexpr bool Pending(TimeoutState s) {
    return s == TimeoutState::kQueued || s == TimeoutState::kArmed ||
           s == TimeoutState::kRunning;
  }

  // When the timeout is due, a clock reading in nanoseconds (saturating).
  // Written before the node is published, then only by the kBusy holder.
  std::atomic<int64_t> deadline{0};

  TimeoutState state() const {
    return StateOf(word_.load(std::memory_order_acquire));
  }
  bool periodic() const { return Has(kPeriodic); }
  bool library() const { return Has(kLibrary); }
  // A hint for filing: the executor clears it any time; ClaimToRun() decides.
  bool RunInFlight() const { return Has(kInFlight); }
  // A node cancelAll() cancelled in the wheel: not armed, no notice coming.
  bool CancelledWithoutNotice() const {
    const uint32_t w = word_.load(std::memory_order_acquire);
    return StateOf(w) != TimeoutState::kArmed && !(w & kNoticed);
  }

  // (new) -> kQueued with two references, the handle's and the worker's.
  void StartQueued(bool periodic, bool library) {
    word_.store(Pack(2, TimeoutState::kQueued) | (periodic ? kPeriodic : 0) |
                    (library ? kLibrary : 0),
                std::memory_order_relaxed);
  }
  // A LocalTimer's Schedule(), before the handle is returned: no other thread
  // can reach the node, so kQueued -> kArmed is a plain store.
  void ArmUnpublished() {
    word_.store(
        WithState(word_.load(std::memory_order_relaxed), TimeoutState::kArmed),
        std::memory_order_relaxed);
  }

  // The worker, after popping the node: kQueued -> kArmed, clearing kMoved,
  // once no reset() holds kBusy. False if it was cancelled while queued.
  bool Arm() {
    uint32_t w = word_.load(std::memory_order_acquire);
    if (w == Pack(1, TimeoutState::kQueued)) {  // nobody can race
      TICKWHEEL_INTERLEAVE_POINT();
      word_.store(Pack(1, TimeoutState::kArmed), std::memory_order_relaxed);
      return true;
    }
    for (;;) {
      if (StateOf(w) != TimeoutState::kQueued) return false;
      if (w & kBusy) {
        w = LoadNotBusy();
        continue;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (word_.compare_exchange_weak(
              w, WithState(w & ~kMoved, TimeoutState::kArmed),
              std::memory_order_acq_rel, std::memory_order_acquire)) {
        return true;
      }
    }
  }

  enum class ClaimOutcome : uint8_t {
    kClaimed,  // the run is the worker's (see the table)
    kSkipped,  // due while the previous run is in flight; kBusy held
    kNotDue,   // past `limit` (a reset() moved it): kMoved cleared; file again
    kLost,     // cancelled: drop the reference unless `word` has kNoticed
  };
  struct Claim {
    ClaimOutcome outcome;
    uint32_t word;     // the word the claim replaced, or found
    int64_t deadline;  // the deadline the claim went by
  };
  // ClaimToRun()'s common case on its own, for the expiry path to inline with
  // nothing else: a one-shot node that only the worker holds (no handle, no
  // notice, no flag), due by `limit`, becomes kExpired with a load, a
  // compare and a store, and true with *deadline its deadline. False, and
  // nothing changed, for every other node: ClaimShared() decides those.
  bool ClaimSoleDue(int64_t limit, int64_t* deadline) {
    if (word_.load(std::memory_order_acquire) !=
        Pack(1, TimeoutState::kArmed)) {
      return false;
    }
    const int64_t d = this->deadline.load(std::memory_order_relaxed);
    if (d > limit) return false;
    TICKWHEEL_INTERLEAVE_POINT();
    word_.store(Pack(1, TimeoutState::kExpired), std::memory_order_relaxed);
    *deadline = d;
    return true;
  }
  // The worker claims an armed node to run it if its deadline is at or before
  // `limit` ("Never early"); `executor`: periodic runs go to the executor.
  // The common case (nobody holds a handle) is inline, ClaimSoleDue(); the
  // rest is out of line, so that the expiry path carries no spill of
  // registers for a loop it rarely enters.
  Claim ClaimToRun(int64_t limit, bool executor) {
    int64_t d;
    if (ClaimSoleDue(limit, &d)) [[likely]] {
      return {ClaimOutcome::kClaimed, Pack(1, TimeoutState::kArmed), d};
    }
    return ClaimShared(limit, executor);
  }
  // ClaimToRun() of a node others may race for (or not yet due), for a
  // caller that has tried ClaimSoleDue() already.
  [[gnu::noinline]] Claim ClaimShared(int64_t limit, bool executor) {
    uint32_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if (StateOf(w) != TimeoutState::kArmed)
        return {ClaimOutcome::kLost, w, 0};
      if (w & kBusy) {
        w = LoadNotBusy();
        continue;
      }
      // Take the news in first, so that the claim's CAS fails on any reset()
      // that lands after the deadline is read.
      if ((w & kMoved) && !word_.compare_exchange_weak(
                              w, w & ~kMoved, std::memory_order_acq_rel,
                              std::memory_order_acquire)) {
        continue;
      }
      w &= ~kMoved;
      const int64_t d = deadline.load(std::memory_order_relaxed);
      if (d > limit) return {ClaimOutcome::kNotDue, w, d};
      TICKWHEEL_INTERLEAVE_POINT();
      ClaimOutcome outcome = ClaimOutcome::kClaimed;
      uint32_t want = w | kBusy | kInFlight;
      if (!(w & kPeriodic)) {
        want = WithState(w, TimeoutState::kExpired);
      } else if (!executor) {
        want = WithState(w, TimeoutState::kRunning) | kBusy;
      } else if (w & kInFlight) {
        outcome = ClaimOutcome::kSkipped;
      }
      if (word_.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return {outcome, w, d};
      }
    }
  }
  // The worker, holding kBusy after an executor's claim (or a skipped run):
  // stores the next run and drops kBusy and kMoved; the node stays armed.
  void ScheduleNextRun(int64_t next_run) {
    deadline.store(next_run, std::memory_order_relaxed);
    ReleaseBusy(kMoved, 0);
  }
  // The worker, before an inline periodic run: drops the kBusy it held while
  // it took the run's own reference to the callable.
  void ReleaseForRun() { ReleaseBusy(0, 0); }
  // The worker, after an inline periodic run: kRunning -> kArmed at
  // `next_run`, or at the deadline a reset() set during the run (kMoved).
  // True: file the node again. False: a cancel made the run the last; *word
  // tells DropCancelled() whether a notice queue holds the node.
  bool EndInlineRun(int64_t next_run, uint32_t* word) {
    uint32_t before;
    if (!AcquireBusy([](TimeoutState s) { return s == TimeoutState::kRunning; },
                     &before)) {
      *word = word_.load(std::memory_order_acquire);
      return false;
    }
    if (!(before & kMoved)) deadline.store(next_run, std::memory_order_relaxed);
    // Holding kBusy, only a cancel() can move the state meanwhile.
    uint32_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      const bool still = StateOf(w) == TimeoutState::kRunning;
      const uint32_t want =
          (still ? WithState(w, TimeoutState::kArmed) : w) & ~(kBusy | kMoved);
      if (word_.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        *word = w;
        return still;
      }
    }
  }
  // The executor's run of a periodic node is over (its closure went).
  void EndExecutorRun() {
    word_.fetch_and(~kInFlight, std::memory_order_release);
  }

  // Who finishes a cancel(): every winner but kOwner waits out kBusy, destroys
  // the task, frees the pending slot; a taken-back cell is settled or buried.
  enum class CancelBy : uint8_t {
    kNobody,     // lost: the node was no longer pending
    kOwner,      // won, and the owner thread's engine finished the cancel
    kWorker,     // won; the worker or stop() finds the node cancelled
    kNotice,     // won from kArmed: the caller pushes a notice to the worker
    kTakenBack,  // won, with the lane cell and the worker's reference
    kLostCell,   // lost, holding the lane cell it took back
  };
  enum class OwnerClaim { kWon, kLost, kElsewhere };
  // cancel(). `on_owner()` hands the node to its LocalTimer's engine when
  // this thread owns it (an OwnerClaim; kElsewhere: go on). `take_back()`
  // tries to take a queued node back out of its lane cell (lane.h: one CAS;
  // a node is published once, so a failed take-back never succeeds later).
  template <typename OnOwner, typename TakeBack>
  CancelBy ClaimCancel(OnOwner on_owner, TakeBack take_back) {
    if (const OwnerClaim c = on_owner(); c != OwnerClaim::kElsewhere) {
      return c == OwnerClaim::kWon ? CancelBy::kOwner : CancelBy::kNobody;
    }
    uint32_t w = word_.load(std::memory_order_acquire);
    if (StateOf(w) == TimeoutState::kQueued && take_back()) {
      // kQueued -> kCancelled, or kCancelled (another cancel() won; expiry
      // and stop() pop the node first) -> kCancelledAgain, dropping the
      // worker's reference; an add keeps what handle copies do meanwhile.
      constexpr uint32_t kClaim = Pack(0, TimeoutState::kCancelled) -
                                  Pack(0, TimeoutState::kQueued) - 1;
      static_assert(Pack(0, TimeoutState::kCancelled) + kClaim + 1 ==
                    Pack(0, TimeoutState::kCancelledAgain));
      TICKWHEEL_INTERLEAVE_POINT();
      w = word_.fetch_add(kClaim, std::memory_order_acq_rel);
      return StateOf(w) == TimeoutState::kQueued ? CancelBy::kTakenBack
                                                 : CancelBy::kLostCell;
    }
    for (;;) {
      const TimeoutState left = StateOf(w);
      if (!Pending(left)) return CancelBy::kNobody;  // acquire load or CAS
      // Armed: a notice tells the worker, unless a reset() pushed one. Queued
      // or running: the worker looks when it pops the node or ends the run.
      const bool push = left == TimeoutState::kArmed && !(w & kNoticed);
      TICKWHEEL_INTERLEAVE_POINT();
      if (word_.compare_exchange_weak(
              w, WithState(w, TimeoutState::kCancelled) | (push ? kNoticed : 0),
              std::memory_order_acq_rel, std::memory_order_acquire)) {
        return push ? CancelBy::kNotice : CancelBy::kWorker;
      }
    }
  }
  // The owner engine's claim (worker/local_engine.h) of a plainly armed node:
  // with kNoticed a notice holds the engine's reference, and kBusy is left
  // to the general path. The caller's handle keeps the count above zero.
  OwnerClaim ClaimCancelOnOwner() {
    uint32_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if (!Pending(StateOf(w))) return OwnerClaim::kLost;
      if (StateOf(w) != TimeoutState::kArmed || (w & (kNoticed | kBusy))) {
        return OwnerClaim::kElsewhere;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (word_.compare_exchange_weak(
              w, WithState(w, TimeoutState::kCancelled) - 1,
              std::memory_order_acq_rel, std::memory_order_acquire)) {
        return OwnerClaim::kWon;
      }
    }
  }

  // cancelAll() on the worker: pending -> kCancelled, no notice (the worker
  // unlinks it), then waits out kBusy. *word: the word replaced or found.
  enum class SweepClaim { kCancelled, kPassedBy, kGone };
  SweepClaim ClaimCancelAll(uint32_t* word) {
    uint32_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      *word = w;
      if (!Pending(StateOf(w))) return SweepClaim::kGone;
      if (w & kLibrary) return SweepClaim::kPassedBy;
      if (word_.compare_exchange_weak(w, WithState(w, TimeoutState::kCancelled),
                                      std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        WaitNotBusy();  // a reset() may still be storing its deadline
        return SweepClaim::kCancelled;
      }
    }
  }
  // stop(), the worker joined and the node popped: `from` -> kStopped once
  // kBusy is clear (a reset() may still use the shared state). False if
  // cancelled meanwhile; *word: the word then.
  bool ClaimForStop(TimeoutState from, uint32_t* word) {
    uint32_t w = LoadNotBusy();
    for (;;) {
      *word = w;
      if (StateOf(w) != from) return false;
      if (w & kBusy) {
        w = LoadNotBusy();
      } else if (word_.compare_exchange_weak(
                     w, WithState(w, TimeoutState::kStopped),
                     std::memory_order_acq_rel, std::memory_order_acquire)) {
        return true;
      }
    }
  }
  // takeTask(), or the discard of a stopped node: kStopped -> kStoppedTaken;
  // of racing calls one wins.
  bool TakeStopped() {
    return CasWhile(
        [](uint32_t w) { return StateOf(w) == TimeoutState::kStopped; },
        [](uint32_t w) { return WithState(w, TimeoutState::kStoppedTaken); });
  }

  // reset(): takes kBusy on a pending node (waiting for another holder), so
  // the caller alone writes `deadline`, until EndReset(). False otherwise.
  bool BeginReset() {
    uint32_t before;
    return AcquireBusy(Pending, &before);
  }
  // The kBusy holder in reset(), moving the deadline earlier: sets kNoticed
  // on an armed node without it; true if it did, and so must push a notice.
  bool MarkNoticed() {
    return CasWhile(
        [](uint32_t w) {
          return StateOf(w) == TimeoutState::kArmed && !(w & kNoticed);
        },
        [](uint32_t w) { return w | kNoticed; });
  }
  // Ends a reset(): drops kBusy and sets kMoved, in one release RMW.
  void EndReset() { ReleaseBusy(0, kMoved); }

  // The worker, popping a notice: clears kNoticed (and kMoved of an armed
  // node, filed by its deadline now) once kBusy is clear; the word replaced.
  uint32_t TakeNotice() {
    uint32_t w = LoadNotBusy();
    for (;;) {
      uint32_t want = w & ~kNoticed;
      if (StateOf(w) == TimeoutState::kArmed) want &= ~kMoved;
      if (word_.compare_exchange_weak(w, want, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return w;
      }
      if (w & kBusy) w = LoadNotBusy();
    }
  }
  void WaitNotBusy() const { LoadNotBusy(); }  // acquire: its stores show

  void Ref() {
    TICKWHEEL_INTERLEAVE_POINT();
    const uint32_t old = word_.fetch_add(1, std::memory_order_relaxed);
    if ((old & kMaxRefs) == kMaxRefs) RefCountOverflow();
  }
  // True if the caller's reference is the only one: nobody can gain one (it
  // takes holding one), and the acquire load reads the end of the acq_rel
  // decrements, so the caller may delete without an RMW.
  bool SoleHolder() const {
    return (word_.load(std::memory_order_acquire) & kMaxRefs) == 1;
  }
  // Drops the caller's reference; true if it was the last (delete the node).
  bool DropRef() {
    TICKWHEEL_INTERLEAVE_POINT();
    return SoleHolder() ||
           (word_.fetch_sub(1, std::memory_order_acq_rel) & kMaxRefs) == 1;
  }

 protected:
  bool Has(uint32_t flag) const {
    return (word_.load(std::memory_order_relaxed) & flag) != 0;
  }

 private:
  // The word once no thread holds kBusy (acquire); the holder only stores.
  uint32_t LoadNotBusy() const {
    uint32_t w = word_.load(std::memory_order_acquire);
    for (int spins = 0; w & kBusy; ++spins) {
      SpinPause(spins);
      w = word_.load(std::memory_order_acquire);
    }
    return w;
  }
  // Takes kBusy if `ok(state)`, waiting for another holder first: true, with
  // `*before` the word it replaced; false (acquire) when not `ok`.
  template <typename Ok>
  bool AcquireBusy(Ok ok, uint32_t* before) {
    uint32_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      if (!ok(StateOf(w))) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return false;
      }
      if (w & kBusy) {
        w = LoadNotBusy();
        continue;
      }
      TICKWHEEL_INTERLEAVE_POINT();
      if (word_.compare_exchange_weak(w, w | kBusy, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        *before = w;
        return true;
      }
    }
  }
  template <typename Ok, typename To>  // acq_rel; true if `to(w)` went in
  bool CasWhile(Ok ok, To to) {
    uint32_t w = word_.load(std::memory_order_relaxed);
    while (ok(w)) {
      TICKWHEEL_INTERLEAVE_POINT();
      if (word_.compare_exchange_weak(w, to(w), std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }
  // Drops kBusy, clearing `clear` and setting `set`, in one release RMW.
  void ReleaseBusy(uint32_t clear, uint32_t set) {
    uint32_t w = word_.load(std::memory_order_relaxed);
    TICKWHEEL_INTERLEAVE_POINT();
    while (!word_.compare_exchange_weak(w, (w & ~(kBusy | clear)) | set,
                                        std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
    }
  }

  std::atomic<uint32_t> word_{Pack(0, TimeoutState::kQueued)};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_NODE_STATE_H_
