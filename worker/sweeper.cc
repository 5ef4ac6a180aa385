// cancelAll() and stop() over everything an engine holds.

#include "tickwheel/worker/sweeper.h"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "tickwheel/base/interleave.h"

namespace tickwheel::internal {

Sweeper::StoppedNodes Sweeper::Collect() {
  driver_.FlushRefiles();
  // (deadline, node) pairs: sorting them touches no node, which matters with
  // a million of them.
  StoppedNodes stopped;
  stopped.reserve(static_cast<size_t>(driver_.wheel().size()));
  auto take = [&](TimeoutNode* node, TimeoutState from) {
    uint32_t w;
    if (!node->ClaimForStop(from, &w)) {  // cancelled meanwhile
      if (from == TimeoutState::kQueued) {
        node->Unref();
      } else {
        TaskRunner::DropCancelled(node, w);
      }
      return;
    }
    stopped.push_back({node->deadline.load(std::memory_order_relaxed), node});
    runner_.Release(1);
  };
  driver_.wheel().DrainAll(
      [&](TimeoutNode* node) { take(node, TimeoutState::kArmed); });
  // Every slot still counted belongs to a node on its way into a lane or
  // queue (its newTimeout() is between reserving and publishing) or to a
  // cancel() between its push and its release. Wait them out.
  while (true) {
    for (auto& shard : shared_.shards) {
      shard.lane.Refresh();
      while (TimeoutNode* node = intake_.PopNew(shard)) {
        take(node, TimeoutState::kQueued);
      }
    }
    while (!intake_.TakeNotices()) {
    }
    // A lane that is not empty holds a cell that a losing cancel() took
    // back and has not settled yet (timer/timeout.cc): wait for it too, so
    // that no cancel() writes to a lane after it is gone.
    if (shared_.SumCounts(std::memory_order_acquire) == 0 &&
        intake_.LanesEmpty()) {
      break;
    }
    TICKWHEEL_INTERLEAVE_POINT();
    std::this_thread::yield();
  }
  // A cancel() may have pushed just before giving back the last slot.
  while (!intake_.TakeNotices()) {
  }
  // Earliest deadline first, the order in which they would have run; ties in
  // the order they were found.
  std::stable_sort(stopped.begin(), stopped.end(),
                   [](const Stopped& a, const Stopped& b) {
                     return a.deadline < b.deadline;
                   });
  return stopped;
}

void Sweeper::Discard(TimeoutNode* node) {
  // Nobody else holds the node yet: the task goes unrun.
  node->TakeStopped();
  node->task().Reset();
  node->Unref();
}

Sweeper::StoppedNodes Sweeper::TakeLibrary(StoppedNodes& nodes) {
  StoppedNodes library;
  std::erase_if(nodes, [&library](const Stopped& s) {
    if (!s.node->library()) return false;
    library.push_back(s);
    return true;
  });
  return library;
}

int64_t Sweeper::CancelAll() {
  // Once stop() has closed the count words, what is pending is its to
  // return (a task that calls cancelAll() while another thread's stop()
  // waits for it, or after a stop() of its own): nothing is touched.
  if (shared_.closed()) return 0;
  int64_t count = 0;
  // pending -> kCancelled, without a notice: the engine itself unlinks and
  // drops what it cancels. Library timeouts (an idle tracker's on this
  // timer) are passed by, and stay on their way into the wheel.
  using Sweep = TimeoutNode::SweepClaim;
  uint32_t w;
  auto cancel = [&](TimeoutNode* node) {
    const Sweep claim = node->ClaimCancelAll(&w);
    if (claim == Sweep::kCancelled) {
      node->task().Reset();
      ++count;
    }
    return claim;
  };
  std::vector<TimeoutNode*>& refiles = driver_.refiles();
  std::vector<TimeoutNode*> kept;
  for (TimeoutNode* node : refiles) {
    if (cancel(node) == Sweep::kPassedBy) {
      kept.push_back(node);
    } else {
      TaskRunner::DropCancelled(node, w);
    }
  }
  refiles = std::move(kept);
  // Waiting at unpublished cells: a cancel() that has taken its node back
  // but not yet buried the cell would otherwise hide the nodes behind it,
  // which are pending and must be counted.
  for (auto& shard : shared_.shards) {
    shard.lane.Refresh();
    while (TimeoutNode* node = intake_.PopNewWaiting(shard)) {
      if (node->library() && node->Arm()) {
        refiles.push_back(node);  // filed with the others, at the pass's end
        continue;
      }
      cancel(node);
      node->Unref();  // the engine's reference: queued nodes are nowhere else
    }
  }
  if (TimeoutNode* running = runner_.running_periodic()) cancel(running);
  driver_.wheel().ForEach([&](TimeoutNode* node) { cancel(node); });
  purge_ = true;
  runner_.Release(count);
  TimerCounters::Bump(counters_.cancelled_by_all, count);
  return count;
}

void Sweeper::PurgeCancelled() {
  purge_ = false;
  std::vector<TimeoutNode*> gone;
  driver_.wheel().ForEach([&](TimeoutNode* node) {
    if (node->CancelledWithoutNotice()) gone.push_back(node);
  });
  for (TimeoutNode* node : gone) {
    driver_.wheel().Remove(node);
    node->Unref();
  }
}

}  // namespace tickwheel::internal
