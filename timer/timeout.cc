#include "timer/timeout.h"

#include <utility>

namespace tickwheel {

using internal::TimeoutNode;
using internal::TimeoutState;

Timeout::Timeout(const Timeout& other)
    : node_(other.node_), shared_(other.shared_) {
  if (node_ != nullptr) node_->Ref();
}

Timeout::Timeout(Timeout&& other) noexcept
    : node_(std::exchange(other.node_, nullptr)),
      shared_(std::exchange(other.shared_, nullptr)) {}

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

Timeout::~Timeout() {
  if (node_ != nullptr) node_->Unref();
}

Timer* Timeout::timer() const {
  return node_ == nullptr ? nullptr : shared_->owner.load(std::memory_order_acquire);
}

bool Timeout::isExpired() const {
  return node_ != nullptr &&
         node_->state.load(std::memory_order_acquire) == TimeoutState::kExpired;
}

bool Timeout::isCancelled() const {
  if (node_ == nullptr) return false;
  switch (node_->state.load(std::memory_order_acquire)) {
    case TimeoutState::kCancelled:
    case TimeoutState::kStopped:
    case TimeoutState::kStoppedTaken:
      return true;
    default:
      return false;
  }
}

bool Timeout::cancel() const {
  if (node_ == nullptr) return false;
  TimeoutState expected = TimeoutState::kPending;
  if (!node_->state.compare_exchange_strong(expected, TimeoutState::kCancelled,
                                            std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
    return false;
  }
  // We own the node's fate now, and its pending slot keeps the shared state
  // alive until we give the slot back, last (see timeout_node.h). The task is
  // ours to destroy: do it now, so that its captures are released at once
  // even if the worker sleeps for an hour; the worker only unlinks the node.
  node_->task = nullptr;
  internal::SharedTimerState* shared = shared_;
  node_->Ref();  // the cancellation queue's reference
  shared->cancelled.Push(node_);
  shared->pending_word.fetch_sub(internal::SharedTimerState::kOne,
                                 std::memory_order_release);
  return true;
}

TimerTask Timeout::takeTask() const {
  if (node_ == nullptr) return nullptr;
  TimeoutState expected = TimeoutState::kStopped;
  if (!node_->state.compare_exchange_strong(expected,
                                            TimeoutState::kStoppedTaken,
                                            std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
    return nullptr;
  }
  TimerTask task = std::move(node_->task);
  node_->task = nullptr;  // leave no moved-from shell behind
  return task;
}

}  // namespace tickwheel
