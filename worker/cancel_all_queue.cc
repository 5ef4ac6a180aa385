// cancelAll() from other threads: tickets, and the worker's answers.

#include "tickwheel/worker/cancel_all_queue.h"

#include <algorithm>

namespace tickwheel::internal {

int64_t CancelAllQueue::Request(const std::function<bool()>& closed,
                                const std::function<void()>& wake) {
  int64_t ticket;
  {
    MutexLock lock(&mu_);
    if (closed()) return 0;  // stopped: stop() returns what is left
    ticket = ++requested_;
    waiting_.store(true, std::memory_order_seq_cst);
  }
  wake();
  MutexLock lock(&mu_);
  cv_.wait(mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return served_ >= ticket;
  });
  int64_t cancelled = 0;
  auto it = std::find_if(results_.begin(), results_.end(),
                         [&](const auto& r) { return r.first == ticket; });
  if (it != results_.end()) {
    cancelled = it->second;
    results_.erase(it);
  }
  return cancelled;
}

void CancelAllQueue::Answer(
    const std::vector<std::pair<int64_t, int64_t>>& results, int64_t last) {
  MutexLock lock(&mu_);
  for (const auto& r : results) results_.push_back(r);
  served_ = std::max(served_, last);
  cv_.notify_all();
}

}  // namespace tickwheel::internal
