// newTimeout()'s side of the worker: reserving a slot and building the node
// (worker/new_node.h), publishing it, and waking the worker when it must.

#include <system_error>

#include <fmt/format.h>

#include "tickwheel/base/interleave.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/new_node.h"
#include "tickwheel/worker/worker.h"

namespace tickwheel::internal {

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
  if (absl::Status s = ReserveSlot(count, config_.max_pending_timeouts);
      !s.ok()) {
    return s;
  }
  TICKWHEEL_INTERLEAVE_POINT();
  if (!started_.load(std::memory_order_acquire)) {
    if (absl::Status s = StartThread(); !s.ok()) {
      count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
      return s;
    }
  }
  // A delay counts from startTime when this call read the clock before the
  // worker started.
  absl::StatusOr<TimeoutNode*> node = NewNode(
      emplace, callable, DeadlineFor(now, start_nanos_, when), when, count);
  if (node.ok()) Publish(*node, shard);
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
