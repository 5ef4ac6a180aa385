// Accepting a new timeout: the slot, the deadline, the node.

#include "tickwheel/worker/new_node.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "tickwheel/base/nanos.h"
#include "tickwheel/base/periodic_task.h"
#include "tickwheel/worker/shared_state.h"

namespace tickwheel::internal {

absl::Status StoppedError(std::string_view call) {
  return absl::FailedPreconditionError(
      fmt::format("{}: the timer has been stopped; create a new one", call));
}

absl::Status ReserveSlot(std::atomic<int64_t>& count, int64_t max) {
  int64_t word = count.load(std::memory_order_relaxed);
  if (max > 0) {
    do {
      if (word & SharedTimerState::kClosed) break;
      if (SharedTimerState::Count(word) >= max) {
        return absl::ResourceExhaustedError(fmt::format(
            "newTimeout: number of pending timeouts ({}) would exceed "
            "max_pending_timeouts ({}); cancel timeouts you no longer need or "
            "raise the limit",
            SharedTimerState::Count(word) + 1, max));
      }
    } while (!count.compare_exchange_weak(word, word + SharedTimerState::kOne,
                                          std::memory_order_relaxed));
  } else {
    word = count.fetch_add(SharedTimerState::kOne, std::memory_order_relaxed);
    if (word & SharedTimerState::kClosed) {
      count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
    }
  }
  if (word & SharedTimerState::kClosed) return StoppedError("newTimeout");
  return absl::OkStatus();
}

int64_t DeadlineFor(int64_t now, int64_t start, const DeadlineSpec& when) {
  // A huge delay saturates at INT64_MAX instead of wrapping into the past.
  if (when.absolute) return std::max(when.nanos, now);
  return SaturatingAdd(std::max(now, start), when.nanos);
}

absl::StatusOr<TimeoutNode*> NewNode(TaskEmplacer emplace, void* callable,
                                     int64_t deadline, const DeadlineSpec& when,
                                     std::atomic<int64_t>& count) {
  auto give_back = [&count] {
    count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
  };
  auto* node = new (std::nothrow) TimeoutNode;
  if (node == nullptr) {
    give_back();
    return absl::ResourceExhaustedError(
        "newTimeout: out of memory for the timeout");
  }
  // A periodic task: one box for all runs, shared by reference with each
  // run in progress (base/periodic_task.h); the callable goes inside it.
  PeriodicTask* box = nullptr;
  if (when.periodic()) {
    box = new (std::nothrow) PeriodicTask(when.period_nanos, when.missed_runs);
    if (box == nullptr) {
      delete node;
      give_back();
      return absl::ResourceExhaustedError(
          "newPeriodic: out of memory for the task");
    }
  }
  try {
    emplace(box != nullptr ? box->task() : node->task(), callable);
  } catch (...) {  // the callable's own copy or move threw: the caller's
    if (box != nullptr) box->Unref();
    delete node;
    give_back();
    throw;
  }
  if (box != nullptr) PeriodicTask::Install(node->task(), box);
  node->StartQueued(when.periodic(), when.library);
  node->deadline.store(deadline, std::memory_order_relaxed);
  return node;
}

}  // namespace tickwheel::internal
