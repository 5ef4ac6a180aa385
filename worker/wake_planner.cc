// Waking the worker: by a deadline earlier than its plan, or for a backlog.

#include "tickwheel/worker/wake_planner.h"

namespace tickwheel::internal {

void WakePlanner::WakeIfSleepingPast(int64_t deadline) {
  int64_t limit = wake_limit_.load(std::memory_order_seq_cst);
  while (deadline <= limit) {
    if (wake_limit_.compare_exchange_weak(limit, kAwake,
                                          std::memory_order_seq_cst)) {
      Wake();
      return;
    }
  }
}

void WakePlanner::WakeForBacklog() {
  int64_t limit = wake_limit_.load(std::memory_order_seq_cst);
  while (limit != kAwake) {
    if (wake_limit_.compare_exchange_weak(limit, kAwake,
                                          std::memory_order_seq_cst)) {
      Wake();
      return;
    }
  }
}

void WakePlanner::Wake() {
  MutexLock lock(&wake_mu_);
  if (sleeper_ != nullptr) sleeper_->Wake();
}

}  // namespace tickwheel::internal
