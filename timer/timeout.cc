#include "tickwheel/timer/timeout.h"

#include <algorithm>
#include <utility>

#include "tickwheel/base/interleave.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel {

using internal::SharedTimerState;
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

bool Timeout::cancel() const {
  if (node_ == nullptr) return false;
  using Lane = SharedTimerState::NodeLane;
  using By = TimeoutNode::CancelBy;
  SharedTimerState* shared = shared_;
  TimeoutNode::LaneCellPtr cell = nullptr;
  // Only a LocalTimer's owner thread touches `shared` before a claim is won:
  // its own engine is alive (TimeoutNode::OwnedByThisThread()). A take-back
  // touches only the cell: lane arrays are type-stable, so it is safe even
  // after the timer is gone (the CAS then fails).
  const By by = node_->ClaimCancel(
      [&] {
        return node_->OwnedByThisThread()
                   ? shared->owner_canceller->CancelOnOwner(node_)
                   : TimeoutNode::OwnerClaim::kElsewhere;
      },
      [&] {
        cell = node_->LaneCell();
        return cell != nullptr && Lane::TakeBackPending(cell, node_);
      });
  const int shard = SharedTimerState::ThisThreadShard();
  switch (by) {
    case By::kNobody:
      return false;
    case By::kOwner:
      return true;
    case By::kLostCell:
      // The winner found the cell empty; this claim dropped the worker's
      // reference all the same. stop() waits for every lane to drain, so the
      // lane outlives this store, though the winner may have given its slot
      // back already.
      Lane::Bury(cell);
      return false;
    case By::kTakenBack:
      // Back to the ring if it is still its lane's last claimed cell (the
      // worker never hears of the node), else a tombstone the worker skips.
      if (!shared->shards[shard].lane.Unclaim(cell)) Lane::Bury(cell);
      break;
    case By::kNotice:
    case By::kWorker:
      break;
  }
  // Won: the node's pending slot keeps `shared` alive until we give it back,
  // last. The task is ours to destroy once a reset() storing its deadline
  // has let go: now, so its captures go at once even if the worker sleeps for
  // an hour. (A periodic run in progress holds its own reference to it.)
  node_->WaitNotBusy();
  node_->task().Reset();
  TICKWHEEL_INTERLEAVE_POINT();
  // The worker's reference keeps the node alive on the notice queue.
  if (by == By::kNotice) shared->PushNotice(node_, shard);
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
  // Release: a worker that reads this deadline in a filed node then sees
  // kBusy or kMoved (TimeoutNode::UnmovedDeadline()).
  node_->deadline.store(deadline, std::memory_order_release);
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
