#include "tickwheel/timer/timeout.h"

#include <algorithm>
#include <utility>

#include "tickwheel/base/interleave.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel {

using internal::TimeoutNode;
using internal::TimeoutState;

Timeout::Timeout(const Timeout& other)
    : node_(other.node_), shared_(other.shared_) {
  if (node_ != nullptr) node_->Ref();
}

void Timeout::Release() { node_->Unref(); }

Timeout& Timeout::operator=(const Timeout& other) {
  if (other.node_ != nullptr) other.node_->Ref();
  if (node_ != nullptr) node_->Unref();
  node_ = other.node_;
  shared_ = other.shared_;
  return *this;
}

Timeout& Timeout::operator=(Timeout&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) node_->Unref();
    node_ = std::exchange(other.node_, nullptr);
    shared_ = std::exchange(other.shared_, nullptr);
  }
  return *this;
}

Timer* Timeout::timer() const {
  return node_ == nullptr ? nullptr
                          : static_cast<Timer*>(
                                shared_->owner.load(std::memory_order_acquire));
}

bool Timeout::isExpired() const {
  return node_ != nullptr && node_->state() == TimeoutState::kExpired;
}

bool Timeout::isPeriodic() const {
  return node_ != nullptr && node_->periodic();
}

TimePoint Timeout::deadline() const {
  if (node_ == nullptr) return TimePoint{};
  return TimePoint(std::chrono::nanoseconds(
      node_->deadline.load(std::memory_order_relaxed)));
}

bool Timeout::isCancelled() const {
  if (node_ == nullptr) return false;
  switch (node_->state()) {
    case TimeoutState::kCancelled:
    case TimeoutState::kCancelledAgain:
    case TimeoutState::kStopped:
    case TimeoutState::kStoppedTaken:
      return true;
    default:
      return false;
  }
}

namespace {

using internal::SharedTimerState;
using Lane = SharedTimerState::NodeLane;

// Settles a lane cell that a take-back emptied, for the cancel() that won
// the node (and so holds its pending slot, which keeps `shared` alive): the
// cell goes back to the ring if it is still its lane's last claimed one (the
// worker then never hears of the node), and otherwise keeps a tombstone,
// which the worker skips. `shard` is the calling thread's.
void SettleTakenBackCell(TimeoutNode::LaneCellPtr cell,
                         SharedTimerState* shared, int shard) {
  if (!shared->shards[shard].lane.Unclaim(cell)) Lane::Bury(cell);
}

// Takes `node` back out of its lane cell unless the worker (or stop()) has
// popped it, or another cancel() took it first; on success the caller holds
// the worker's reference and must settle the cell. Touches only the cell:
// lane arrays are type-stable, so this is safe even after the timer is gone
// (the CAS then fails).
TimeoutNode::LaneCellPtr TakeBack(TimeoutNode* node) {
  TimeoutNode::LaneCellPtr cell = node->LaneCell();
  return cell != nullptr && Lane::TakeBackPending(cell, node) ? cell : nullptr;
}

// cancel() of a node it has just taken back out of lane cell `cell`, and
// with it the worker's reference (timeout_node.h, "take-back first"): claims
// the node and settles the cell. True iff this call won.
bool CancelTakenBack(TimeoutNode* node, TimeoutNode::LaneCellPtr cell,
                     SharedTimerState* shared, int shard) {
  TICKWHEEL_INTERLEAVE_POINT();
  if (!node->CancelTakenBack()) {
    // Another cancel() won the state and then found the cell empty: the
    // claim has dropped the worker's reference all the same, and the cell
    // is ours to settle. Bury() touches only the cell, and stop() waits
    // until every lane is drained, so the lane outlives this store although
    // the winner may already have given its slot back.
    Lane::Bury(cell);
    return false;
  }
  // Won: the node's pending slot keeps `shared` alive until we give it back,
  // last. A reset() may still be storing its deadline.
  SettleTakenBackCell(cell, shared, shard);
  node->WaitNotBusy();
  node->task().Reset();
  TICKWHEEL_INTERLEAVE_POINT();
  shared->ReleaseCancelled(shard);
  return true;
}

}  // namespace

bool Timeout::cancel() const {
  if (node_ == nullptr) return false;
  SharedTimerState* shared = shared_;
  // A LocalTimer's owner thread: outside advance() the engine settles the
  // node on the spot (worker/local_engine.h). Only then is `shared` touched
  // before a claim is won: the owner thread's own engine is alive.
  if (node_->OwnedByThisThread()) {
    using Claim = TimeoutNode::OwnerClaim;
    const Claim claim = shared->owner_canceller->CancelOnOwner(node_);
    if (claim != Claim::kElsewhere) return claim == Claim::kWon;
  }
  const int shard = SharedTimerState::ThisThreadShard();
  // Still in its lane (the request-timeout pattern): take it back before
  // the worker sees it, then claim it, dropping the worker's reference in
  // the same CAS (timeout_node.h, "Ground rules", take-back first).
  if (node_->state() == TimeoutState::kQueued) {
    if (TimeoutNode::LaneCellPtr cell = TakeBack(node_)) {
      return CancelTakenBack(node_, cell, shared, shard);
    }
  }
  // Queued: the node is in its shard's pending queue, or its lane cell was
  // popped or taken meanwhile. Armed: it is in the wheel, and the worker
  // learns of the cancellation from the shard's notice queue, unless a
  // reset() put it there already (kNoticed). Running: a periodic run is in
  // progress on the worker, which looks at the state when it returns.
  const TimeoutNode::CancelClaim claim = node_->ClaimCancel();
  if (!claim.won) return false;
  // We own the node's fate now, and its pending slot keeps the shared state
  // alive until we give the slot back, last (see timeout_node.h). The task is
  // ours to destroy, once a thread that holds kBusy has let go: do it now,
  // so that its captures are released at once even if the worker sleeps for
  // an hour; the worker only unlinks the node. (A periodic run in progress
  // holds its own reference to the callable.)
  node_->WaitNotBusy();
  node_->task().Reset();
  TICKWHEEL_INTERLEAVE_POINT();
  if (claim.push) {
    // The worker's reference keeps the node alive in the queue.
    shared->PushNotice(node_, shard);
  } else if (claim.left == TimeoutState::kQueued) {
    if (TimeoutNode::LaneCellPtr cell = TakeBack(node_)) {
      // Still in its lane: we took it back, and with it the worker's
      // reference, so the worker never touches the node and this thread
      // frees it (see worker/worker.h, "The fast lane").
      SettleTakenBackCell(cell, shared, shard);
      node_->Unref();  // never the last: this handle holds one
    }
  }
  // Otherwise the worker (or stop()) popped it, or a racing cancel() took
  // it back: either finds it cancelled and drops the worker's reference.
  TICKWHEEL_INTERLEAVE_POINT();
  shared->ReleaseCancelled(shard);
  return true;
}

bool Timeout::reset(absl::Duration delay) const {
  if (node_ == nullptr) return false;
  // The clock is read once kBusy keeps the shared state alive.
  return Reset(internal::DelayNanos(delay), /*absolute=*/false);
}

bool Timeout::resetAt(TimePoint deadline) const {
  if (node_ == nullptr) return false;
  return Reset(std::chrono::duration_cast<std::chrono::nanoseconds>(
                   deadline.time_since_epoch())
                   .count(),
               /*absolute=*/true);
}

bool Timeout::Reset(int64_t nanos, bool absolute) const {
  if (!node_->BeginReset()) return false;
  // Pending, and stop() waits for kBusy before it collects the node: the
  // shared state is alive until we let go.
  SharedTimerState* shared = shared_;
  const int64_t now = shared->NowNanos();
  // A deadline in the past is taken as now, as newTimeoutAt() does.
  const int64_t deadline =
      absolute ? std::max(nanos, now) : internal::SaturatingAdd(now, nanos);
  const int64_t old = node_->deadline.load(std::memory_order_relaxed);
  node_->deadline.store(deadline, std::memory_order_relaxed);
  if (deadline < old) {
    // Earlier: a filed node must move to an earlier bucket, which only the
    // worker can do. Tell it through the notice queue, unless it has been
    // told already, or the node is not filed (queued: the worker files it
    // by its deadline; running: the worker re-reads it after the run).
    if (node_->MarkNoticed()) {
      shared->PushNotice(node_, SharedTimerState::ThisThreadShard());
    }
    shared->waker->WakeIfSleepingPast(deadline);
  }
  TICKWHEEL_INTERLEAVE_POINT();
  node_->EndReset();
  return true;
}

TimerTask Timeout::takeTask() const {
  if (node_ == nullptr) return nullptr;
  if (!node_->TakeStopped()) return nullptr;
  TICKWHEEL_INTERLEAVE_POINT();
  return internal::TakeTask(node_->task());
}

}  // namespace tickwheel
