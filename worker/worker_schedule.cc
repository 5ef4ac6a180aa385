// newTimeout()'s side of the worker: reserving a slot, building the node,
// publishing it, and waking the worker when it must.

#include <algorithm>
#include <new>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/base/interleave.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/base/periodic_task.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/worker.h"

namespace tickwheel::internal {

absl::Status StoppedError(std::string_view call) {
  return absl::FailedPreconditionError(
      fmt::format("{}: the timer has been stopped; create a new Timer", call));
}

absl::StatusOr<TimeoutNode*> Worker::Schedule(TaskEmplacer emplace,
                                              void* callable,
                                              const DeadlineSpec& when) {
  // The clock first: the vDSO orders its TSC read (lfence or rdtscp), which
  // would otherwise wait for the RMW below to complete. Reading it before
  // the reservation is still reading it during this call, so the deadline is
  // never early.
  const int64_t now =
      config_.monotonic_clock ? MonotonicNanos() : config_.clock->NowNanos();
  const int shard = SharedTimerState::ThisThreadShard();
  std::atomic<int64_t>& count = shared_.CountWord(shard);
  if (absl::Status s = Reserve(count); !s.ok()) return s;
  TICKWHEEL_INTERLEAVE_POINT();
  if (!started_.load(std::memory_order_acquire)) {
    if (absl::Status s = StartThread(); !s.ok()) {
      count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
      return s;
    }
  }
  absl::StatusOr<TimeoutNode*> node =
      NewNode(emplace, callable, Deadline(now, when), when, count);
  if (node.ok()) Publish(*node, shard);
  return node;
}

absl::Status Worker::Reserve(std::atomic<int64_t>& count) {
  // With a limit, a CAS loop, so that the count never exceeds it, not even
  // for an instant; without, one add.
  const int64_t max = config_.max_pending_timeouts;
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

int64_t Worker::Deadline(int64_t now, const DeadlineSpec& when) const {
  // A delay counts from now, or from startTime when the call read the
  // clock before the worker started; a huge delay saturates at INT64_MAX
  // instead of wrapping into the past. An absolute deadline in the past is
  // taken as now: it runs promptly, and deadline() and the lateness it
  // records measure from the call, not from a time before it.
  if (when.absolute) return std::max(when.nanos, now);
  return SaturatingAdd(std::max(now, start_nanos_), when.nanos);
}

absl::StatusOr<TimeoutNode*> Worker::NewNode(TaskEmplacer emplace,
                                             void* callable, int64_t deadline,
                                             const DeadlineSpec& when,
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

void Worker::Publish(TimeoutNode* node, int shard) {
  // The fast lane if it has room, else the queue. Either claim (a seq_cst
  // CAS or exchange) pairs with Sleep()'s check.
  auto& my_shard = shared_.shards[shard];
  const int64_t deadline = node->deadline.load(std::memory_order_relaxed);
  TICKWHEEL_INTERLEAVE_POINT();
  const int64_t cell = my_shard.lane.Claim();
  if (cell < 0) {
    // The lane is full: kLaneCapacity nodes wait for a worker that sleeps
    // (or runs behind). Overflowing into the queue wakes it whatever the
    // deadline, so that what waits, cancelled nodes included, is bounded by
    // a count rather than by the time to the next deadline.
    my_shard.queue.Push(node);
    planner_.WakeForBacklog();
    return;
  }
  node->SetLaneCell(my_shard.lane.Cell(cell));
  my_shard.lane.Publish(cell, node);
  TICKWHEEL_INTERLEAVE_POINT();
  // The node pool is short of faulted-in memory (worker/chunk_policy.h): wake
  // the worker, whatever the deadline, so that it faults the next chunks in
  // before this thread needs them. A relaxed load of a line that changes
  // once per shortfall; the first caller claims the wake-up, the others
  // find the worker awake. Only on the real clock, whose worker also plans
  // the pool's decay: a test clock's wake-ups stay those of its timeouts.
  if constexpr (TimeoutNode::kPooled) {
    if (config_.monotonic_clock && NodePool::Depot().ReserveWanted()) {
      planner_.WakeForBacklog();
      return;
    }
  }
  planner_.WakeIfSleepingPast(deadline);
}

absl::Status Worker::StartThread() {
  MutexLock lock(&start_mu_);
  if (started_.load(std::memory_order_relaxed)) return absl::OkStatus();
  if (shared_.shards[0].pending_word.load(std::memory_order_relaxed) &
      SharedTimerState::kClosed) {
    return StoppedError("newTimeout");
  }
  planner_.SetSleeperBeforeStart(config_.clock->NewSleeper());
  runner_.SetKeepAlive(weak_from_this());
  try {
    thread_ = std::thread([self = shared_from_this()] { self->Run(); });
  } catch (const std::system_error& e) {
    planner_.SetSleeperBeforeStart(nullptr);
    return absl::ResourceExhaustedError(fmt::format(
        "newTimeout: cannot start the worker thread: {}", e.what()));
  }
  // newTimeout() must not compute a deadline before startTime exists.
  start_ready_.wait(false, std::memory_order_acquire);
  started_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

}  // namespace tickwheel::internal
