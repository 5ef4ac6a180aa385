// Taking in what producers hand over: notices, then new nodes.

#include "tickwheel/worker/intake.h"

#include "tickwheel/worker/node_state.h"

namespace tickwheel::internal {

bool Intake::LanesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.lane.Empty()) return false;
  }
  return true;
}

bool Intake::NoticesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.notices.Empty()) return false;
  }
  return true;
}

bool Intake::Empty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.lane.Empty() || !shard.queue.Empty()) return false;
  }
  return true;
}

TimeoutNode* Intake::PopNew(SharedTimerState::Shard& shard) {
  while (true) {
    TimeoutNode* node = nullptr;
    switch (shard.lane.Pop(&node)) {
      case SharedTimerState::NodeLane::Popped::kItem:
        return node;
      case SharedTimerState::NodeLane::Popped::kTakenBack:
        // cancel() took it back, and with it our reference.
        traffic_ = true;
        continue;
      case SharedTimerState::NodeLane::Popped::kNotYet:
      case SharedTimerState::NodeLane::Popped::kEmpty:
        return shard.queue.Pop();
    }
  }
}

TimeoutNode* Intake::PopNewWaiting(SharedTimerState::Shard& shard) {
  using Popped = SharedTimerState::NodeLane::Popped;
  for (int spins = 0;; ++spins) {
    TimeoutNode* node = nullptr;
    switch (shard.lane.Pop(&node)) {
      case Popped::kItem:
        return node;
      case Popped::kTakenBack:
        traffic_ = true;
        continue;
      case Popped::kEmpty:
        return shard.queue.Pop();
      case Popped::kNotYet:
        if (TimeoutNode* queued = shard.queue.Pop()) return queued;
        SpinPause(spins);
        shard.lane.Recount();  // the cell may have been given back
        continue;
    }
  }
}

bool Intake::TakeNotices() {
  int budget = WheelDriver::kSliceBudget;
  for (auto& shard : shared_.shards) {
    int64_t popped = 0;
    while (budget > 0) {
      TimeoutNode* node = shard.notices.Pop();
      if (node == nullptr) break;
      ++popped;
      --budget;
      // Clears kNoticed, and kMoved of an armed node, which is filed by its
      // deadline now.
      const uint32_t w = node->TakeNotice();
      switch (TimeoutNode::StateOf(w)) {
        case TimeoutState::kArmed:  // reset() to an earlier deadline
          driver_.FileAgain(node);
          break;
        case TimeoutState::kStopped:
        case TimeoutState::kStoppedTaken:
          break;  // stop() collected it, and its reference
        default:  // cancelled, or expired while on the queue
          driver_.Unlink(node);
          node->Unref();  // the driver's reference
      }
    }
    if (popped == 0) continue;
    traffic_ = true;
    shard.notice_backlog.fetch_sub(popped, std::memory_order_relaxed);
  }
  return budget > 0;
}

bool Intake::TakeNew(int64_t now) {
  constexpr int kShards = SharedTimerState::kShards;
  constexpr int kShare = WheelDriver::kSliceBudget / kShards;
  bool done = true;
  for (int i = 0; i < kShards; ++i) {
    auto& shard = shared_.shards[(next_shard_ + i) % kShards];
    shard.lane.Refresh();
    int n = 0;
    for (; n < kShare; ++n) {
      TimeoutNode* node = PopNew(shard);
      if (node == nullptr) break;
      traffic_ = true;
      if (!node->Arm()) {
        // Cancelled while queued: nobody else will hand it to us.
        node->Unref();
        continue;
      }
      if (!driver_.File(node, now)) return false;  // a run stopped the timer
    }
    if (n == kShare) done = false;
  }
  next_shard_ = (next_shard_ + 1) % kShards;
  return done;
}

}  // namespace tickwheel::internal
