#include "timer/timeout.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace tickwheel {
namespace internal {

void RefCountOverflow() {
  std::fprintf(stderr,
               "tickwheel: more than %u handles to one Timeout are alive at "
               "once; keep fewer copies (share one instead)\n",
               TimeoutNode::kMaxRefs - 1);
  std::abort();
}

}  // namespace internal

using internal::TimeoutNode;
using internal::TimeoutState;

Timeout::Timeout(const Timeout& other)
    : node_(other.node_), shared_(other.shared_) {
  if (node_ != nullptr) node_->Ref();
}

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
  return node_ == nullptr ? nullptr : shared_->owner.load(std::memory_order_acquire);
}

bool Timeout::isExpired() const {
  return node_ != nullptr && node_->state() == TimeoutState::kExpired;
}

bool Timeout::isCancelled() const {
  if (node_ == nullptr) return false;
  switch (node_->state()) {
    case TimeoutState::kCancelled:
    case TimeoutState::kStopped:
    case TimeoutState::kStoppedTaken:
      return true;
    default:
      return false;
  }
}

namespace {

using internal::SharedTimerState;

// Takes `node` back out of its fast-lane cell unless the worker (or stop())
// has popped it, and with it the worker's reference; true if it did. The
// cell goes back to the ring if it is still its lane's last claimed one (the
// worker then never hears of the node: counted in `withdrawn` for
// metrics()), and otherwise keeps a tombstone, which the worker counts.
// `shard` is the calling thread's. The node's pending slot must be held
// once this succeeds (it keeps `shared` alive); the take-back itself may
// come earlier, since it touches only the cell, and lane arrays are
// type-stable.
bool TakeBackFromLane(TimeoutNode* node, SharedTimerState* shared,
                      int shard) {
  using Lane = SharedTimerState::NodeLane;
  TimeoutNode::LaneCellPtr cell = node->LaneCell();
  if (cell == nullptr || !Lane::TakeBackPending(cell, node)) return false;
  SharedTimerState::Shard& mine = shared->shards[shard];
  if (mine.lane.Unclaim(cell)) {
    mine.withdrawn.fetch_add(1, std::memory_order_relaxed);
  } else {
    Lane::Bury(cell);
  }
  return true;
}

}  // namespace

bool Timeout::cancel() const {
  if (node_ == nullptr) return false;
  SharedTimerState* shared = shared_;
  const int shard = SharedTimerState::ThisThreadShard();
  // The lone handle of a node still in its lane: take it back first, then
  // claim it and drop the worker's reference with one store (see
  // timeout_node.h, "The lone handle's cancel"). The take-back touches
  // only the type-stable cell; once it succeeds, the node's pending slot
  // keeps the shared state alive for the rest.
  if (node_->refs_state.load(std::memory_order_acquire) ==
          TimeoutNode::Pack(2, TimeoutState::kQueued) &&
      TakeBackFromLane(node_, shared, shard)) {
    node_->refs_state.store(TimeoutNode::Pack(1, TimeoutState::kCancelled),
                            std::memory_order_relaxed);
    node_->task().Reset();
    shared->CountWord(shard).fetch_sub(SharedTimerState::kOne,
                                       std::memory_order_release);
    return true;
  }
  // Queued: the node is in its shard's lane or pending queue. Armed: it is
  // in the wheel, and the worker learns of the cancellation from the
  // cancellation queue (see timeout_node.h).
  const TimeoutState left = node_->TransitionIf(
      [](TimeoutState s) {
        return s == TimeoutState::kQueued || s == TimeoutState::kArmed;
      },
      TimeoutState::kCancelled);
  if (left != TimeoutState::kQueued && left != TimeoutState::kArmed) {
    return false;
  }
  // We own the node's fate now, and its pending slot keeps the shared state
  // alive until we give the slot back, last (see timeout_node.h). The task is
  // ours to destroy: do it now, so that its captures are released at once
  // even if the worker sleeps for an hour; the worker only unlinks the node.
  node_->task().Reset();
  if (left == TimeoutState::kArmed) {
    // The worker's reference keeps the node alive in the queue.
    shared->shards[shard].cancelled.Push(node_);
  } else if (TakeBackFromLane(node_, shared, shard)) {
    // Still in its shard's fast lane: we took it back, and with it the
    // worker's reference, so the worker never touches the node and this
    // thread frees it (see worker/worker.h, "The fast lane").
    node_->Unref();  // never the last: this handle holds one
  }
  shared->CountWord(shard).fetch_sub(SharedTimerState::kOne,
                                     std::memory_order_release);
  return true;
}

TimerTask Timeout::takeTask() const {
  if (node_ == nullptr) return nullptr;
  if (!node_->Transition(TimeoutState::kStopped, TimeoutState::kStoppedTaken)) {
    return nullptr;
  }
  return node_->task().Take();
}

}  // namespace tickwheel
