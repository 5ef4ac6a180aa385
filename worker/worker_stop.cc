// stop() and cancelAll(): collecting what is pending, once the worker is
// gone, and cancelling everything while it runs.

#include <algorithm>
#include <thread>
#include <utility>

#include "tickwheel/base/interleave.h"
#include "tickwheel/worker/worker.h"

namespace tickwheel::internal {

bool Worker::Close() {
  bool first = false;
  for (auto& shard : shared_.shards) {
    first |= !(shard.pending_word.fetch_or(SharedTimerState::kClosed,
                                           std::memory_order_acq_rel) &
               SharedTimerState::kClosed);
  }
  return first;
}

Worker::StoppedNodes Worker::CollectUnprocessed() {
  FlushRefiles();
  // (deadline, node) pairs: sorting them touches no node, which matters with a
  // million of them.
  StoppedNodes stopped;
  stopped.reserve(static_cast<size_t>(wheel_.size()));
  auto take = [&](TimeoutNode* node, TimeoutState from) {
    uint32_t w;
    if (!node->ClaimForStop(from, &w)) {  // cancelled meanwhile
      if (from == TimeoutState::kQueued) {
        node->Unref();
      } else {
        DropCancelled(node, w);
      }
      return;
    }
    stopped.push_back({node->deadline.load(std::memory_order_relaxed), node});
    Release(1);
  };
  wheel_.DrainAll([&](TimeoutNode* node) { take(node, TimeoutState::kArmed); });
  // Every slot still counted belongs to a node on its way into a lane or
  // queue (its newTimeout() is between reserving and publishing) or to a
  // cancel() between its push and its release. Wait them out.
  while (true) {
    for (auto& shard : shared_.shards) {
      shard.lane.Refresh();
      while (TimeoutNode* node = PopNew(shard)) {
        take(node, TimeoutState::kQueued);
      }
    }
    while (!ProcessNotices()) {
    }
    // A lane that is not empty holds a cell that a losing cancel() took
    // back and has not settled yet (timer/timeout.cc): wait for it too, so
    // that no cancel() writes to a lane after it is gone.
    if (shared_.SumCounts(std::memory_order_acquire) == 0 && LanesEmpty()) {
      break;
    }
    TICKWHEEL_INTERLEAVE_POINT();
    std::this_thread::yield();
  }
  // A cancel() may have pushed just before giving back the last slot.
  while (!ProcessNotices()) {
  }
  // Earliest deadline first, the order in which they would have run; ties in
  // the order they were found.
  std::stable_sort(stopped.begin(), stopped.end(),
                   [](const Stopped& a, const Stopped& b) {
                     return a.deadline < b.deadline;
                   });
  return stopped;
}

void Worker::DiscardStopped(TimeoutNode* node) {
  // Nobody else holds the node yet: the task goes unrun.
  node->TakeStopped();
  node->task().Reset();
  node->Unref();
}

absl::StatusOr<Worker::StoppedNodes> Worker::Stop() {
  if (OnWorkerThread()) {
    return absl::FailedPreconditionError(
        "stop: called from the timer's own worker thread (inside a task, or a "
        "task_executor that runs tasks inline); call stop() from another "
        "thread");
  }
  MutexLock lock(&stop_mu_);
  if (!Close()) return StoppedNodes();  // already stopped
  // After this, no thread can start: StartThread() checks the closed bit
  // under start_mu_.
  bool started;
  {
    MutexLock start_lock(&start_mu_);
    started = started_.load(std::memory_order_relaxed);
  }
  if (started) {
    shutdown_.store(true, std::memory_order_release);
    WakeWorker();
    thread_.join();
  }
  ServeCancelAll();  // what the worker left: nothing more is pending
  StoppedNodes unprocessed = CollectUnprocessed();
  // Library timeouts (an idle tracker's on this timer) are not the
  // caller's: their tasks are destroyed here, unrun.
  std::erase_if(unprocessed, [](const Stopped& s) {
    if (!s.node->library()) return false;
    DiscardStopped(s.node);
    return true;
  });
  MutexLock wake_lock(&wake_mu_);
  sleeper_.reset();  // unregisters from a ManualClock
  return unprocessed;
}

void Worker::Shutdown() {
  // From now on Timeout::timer() answers nullptr.
  shared_.owner.store(nullptr, std::memory_order_release);
  if (!OnWorkerThread()) {
    absl::StatusOr<StoppedNodes> unprocessed = Stop();
    if (unprocessed.ok()) {
      for (const Stopped& s : *unprocessed) DiscardStopped(s.node);
    }
    return;
  }
  // Destroyed from inside one of our own tasks: we cannot join ourselves.
  MutexLock lock(&stop_mu_);
  if (!Close()) return;
  finish_on_thread_ = true;
  shutdown_.store(true, std::memory_order_release);
  thread_.detach();
}

int64_t Worker::CancelAll() {
  if (OnWorkerThread()) return CancelAllHere();
  if (!started_.load(std::memory_order_acquire)) return 0;  // none pending
  int64_t ticket;
  {
    MutexLock lock(&cancel_all_mu_);
    if (shared_.shards[0].pending_word.load(std::memory_order_acquire) &
        SharedTimerState::kClosed) {
      return 0;  // stopped: stop() returns what is left
    }
    ticket = ++cancel_all_requested_;
    cancel_all_waiting_.store(true, std::memory_order_seq_cst);
  }
  WakeForBacklog();
  MutexLock lock(&cancel_all_mu_);
  cancel_all_cv_.wait(cancel_all_mu_,
                      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cancel_all_mu_) {
                        return cancel_all_served_ >= ticket;
                      });
  int64_t cancelled = 0;
  auto it = std::find_if(cancel_all_results_.begin(), cancel_all_results_.end(),
                         [&](const auto& r) { return r.first == ticket; });
  if (it != cancel_all_results_.end()) {
    cancelled = it->second;
    cancel_all_results_.erase(it);
  }
  return cancelled;
}

void Worker::ServeCancelAll() {
  if (!cancel_all_waiting_.load(std::memory_order_acquire)) return;
  int64_t first, last;
  {
    MutexLock lock(&cancel_all_mu_);
    first = cancel_all_served_ + 1;
    last = cancel_all_requested_;
    cancel_all_waiting_.store(false, std::memory_order_relaxed);
  }
  // Each request in turn (a later one finds what was scheduled since). Not
  // under the mutex: cancelling destroys tasks, which is user code. After
  // stop() has joined the worker nothing is pending, and each gets 0.
  std::vector<std::pair<int64_t, int64_t>> results;
  for (int64_t ticket = first; ticket <= last; ++ticket) {
    const bool alive =
        !shutdown_.load(std::memory_order_acquire) || OnWorkerThread();
    results.emplace_back(ticket, alive ? CancelAllHere() : 0);
    if (alive) PurgeCancelled();
  }
  MutexLock lock(&cancel_all_mu_);
  for (const auto& r : results) cancel_all_results_.push_back(r);
  cancel_all_served_ = std::max(cancel_all_served_, last);
  cancel_all_cv_.notify_all();
}

int64_t Worker::CancelAllHere() {
  int64_t count = 0;
  // pending -> kCancelled, without a notice: the worker itself unlinks and
  // drops what it cancels. Library timeouts (an idle tracker's on this
  // timer) are passed by, and stay on their way into the wheel.
  auto cancel = [&](TimeoutNode* node) {
    uint32_t w;
    if (node->ClaimCancelAll(&w)) {
      node->task().Reset();
      ++count;
    }
    return w;
  };
  std::vector<TimeoutNode*> kept;
  for (TimeoutNode* node : refile_) {
    const uint32_t w = cancel(node);
    if (TimeoutNode::StateOf(w) == TimeoutState::kArmed &&
        (w & TimeoutNode::kLibrary)) {
      kept.push_back(node);
    } else {
      DropCancelled(node, w);
    }
  }
  refile_ = std::move(kept);
  for (auto& shard : shared_.shards) {
    shard.lane.Refresh();
    while (TimeoutNode* node = PopNew(shard)) {
      if (node->library() && node->Arm()) {
        refile_.push_back(node);  // filed with the others, at the pass's end
        continue;
      }
      cancel(node);
      node->Unref();  // the worker's reference: queued nodes are nowhere else
    }
  }
  if (running_periodic_ != nullptr) cancel(running_periodic_);
  wheel_.ForEach([&](TimeoutNode* node) { cancel(node); });
  purge_ = true;
  Release(count);
  Bump(cancelled_by_all_, count);
  return count;
}

void Worker::PurgeCancelled() {
  purge_ = false;
  std::vector<TimeoutNode*> gone;
  wheel_.ForEach([&](TimeoutNode* node) {
    const uint32_t w = node->refs_state.load(std::memory_order_acquire);
    const TimeoutState s = TimeoutNode::StateOf(w);
    if (s != TimeoutState::kArmed && !(w & TimeoutNode::kNoticed)) {
      gone.push_back(node);
    }
  });
  for (TimeoutNode* node : gone) {
    wheel_.Remove(node);
    node->Unref();
  }
}

WorkerCounters Worker::Counters() const {
  WorkerCounters c;
  c.pending = pending();
  c.expired = expired_.load(std::memory_order_relaxed);
  c.cancelled =
      shared_.CancelCount() + cancelled_by_all_.load(std::memory_order_relaxed);
  c.ticks = ticks_.load(std::memory_order_relaxed);
  c.catch_up_ticks = catch_up_ticks_.load(std::memory_order_relaxed);
  c.wakeups = wakeups_.load(std::memory_order_relaxed);
  c.worst_lateness_nanos = lateness_.max.load(std::memory_order_relaxed);
  return c;
}

}  // namespace tickwheel::internal
