// The single-threaded engine: its parts assembled once, driven by its
// owner's calls (a LocalTimer) or by a Worker's passes.

#include "tickwheel/worker/local_engine.h"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/new_node.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {

LocalEngine::LocalEngine(LocalEngineConfig config, BacklogWaker* waker)
    : config_(std::move(config)),
      owner_driven_(waker == nullptr),
      runner_(shared_, counters_, config_.task_executor,
              owner_driven_ ? "advance() goes on with the next task"
                            : "the worker goes on"),
      driver_(
          [this] {
            WheelShape shape = config_.shape;
            shape.deadline_order |= owner_driven_;
            return shape;
          }(),
          runner_, counters_, stopping_),
      intake_(shared_, driver_),
      sweeper_(shared_, intake_, driver_, runner_, counters_) {
  shared_.owner.store(config_.owner, std::memory_order_relaxed);
  shared_.limited = config_.max_pending_timeouts > 0;
  shared_.waker = owner_driven_ ? this : waker;
  if (owner_driven_) shared_.owner_canceller = this;
  shared_.clock = config_.clock.get();
  shared_.monotonic_clock = config_.monotonic_clock;
  if (owner_driven_) Start(shared_.NowNanos());
}

LocalEngine::~LocalEngine() {
  if (owner_driven_) Shutdown();
}

void LocalEngine::Shutdown() {
  if (in_advance_) {
    std::fprintf(stderr,
                 "tickwheel: a LocalTimer was destroyed by one of its own "
                 "tasks, inside advance(); destroy it once advance() has "
                 "returned\n");
    std::abort();
  }
  shared_.Close();
  ClearExpedited();
  StoppedNodes left = CollectOwned();
  left.insert(left.end(), stopped_.begin(), stopped_.end());
  stopped_.clear();
  Discard(left);
}

LocalEngine::StoppedNodes LocalEngine::Collect(StoppedNodes* library) {
  if (collected_) return {};
  collected_ = true;
  StoppedNodes nodes = sweeper_.Collect();
  *library = Sweeper::TakeLibrary(nodes);
  return nodes;
}

LocalEngine::StoppedNodes LocalEngine::CollectOwned() {
  // Library timeouts (the sleeps of timer/coro.h) are not the caller's:
  // their tasks are destroyed unrun, which ends each sleep and resumes its
  // coroutine on this thread. That comes last, once collected_ is set and
  // the timer closed, since the coroutine may call the timer again.
  StoppedNodes library;
  StoppedNodes nodes = Collect(&library);
  Discard(library);
  return nodes;
}

void LocalEngine::Discard(const StoppedNodes& nodes) {
  for (const Stopped& s : nodes) Sweeper::Discard(s.node);
}

TimeoutNode::OwnerClaim LocalEngine::CancelOnOwner(TimeoutNode* node) {
  using Claim = TimeoutNode::OwnerClaim;
  // Called on the owner thread (the node carries its tag, set by
  // Schedule()), so `where`, the owner's own field, may be read. Inside
  // Advance() too: the wheel lets a task unlink any node it holds while it
  // expires a bucket (Wheel, "Expiring a bucket"). A node it does not hold
  // (running, waiting to be filed again, deferred) takes the general path.
  if (!Wheel::Linked(node)) return Claim::kElsewhere;
  if (const Claim claim = node->ClaimCancelOnOwner(); claim != Claim::kWon) {
    return claim;
  }
  driver_.Unlink(node);
  owner_cancels_.store(owner_cancels_.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  // The task's destructor may call this timer again (a sleep's resumes its
  // coroutine): the wheel is whole by now. The slot goes back last, as
  // every winning cancel() gives it (worker/shared_state.h).
  node->task().Reset();
  ReleaseOwnSlot();
  return Claim::kWon;
}

absl::Status LocalEngine::ReserveOwnSlot() {
  std::atomic<int64_t>& count = shared_.CountWord(0);
  if (shared_.limited) return ReserveSlot(count, config_.max_pending_timeouts);
  const int64_t word = count.load(std::memory_order_relaxed);
  if (word & SharedTimerState::kClosed) return StoppedError("newTimeout");
  count.store(word + SharedTimerState::kOne, std::memory_order_relaxed);
  return absl::OkStatus();
}

void LocalEngine::ReleaseOwnSlot() {
  std::atomic<int64_t>& count = shared_.CountWord(0);
  if (shared_.limited) {
    count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
  } else {
    count.store(count.load(std::memory_order_relaxed) - SharedTimerState::kOne,
                std::memory_order_release);
  }
}

absl::StatusOr<TimeoutNode*> LocalEngine::Schedule(TaskEmplacer emplace,
                                                   void* callable,
                                                   const DeadlineSpec& when) {
  const int64_t now = shared_.NowNanos();
  if (absl::Status s = ReserveOwnSlot(); !s.ok()) return s;
  std::atomic<int64_t>& count = shared_.CountWord(0);
  absl::StatusOr<TimeoutNode*> node =
      NewNode(emplace, callable, DeadlineFor(now, origin(), when), when, count);
  if (!node.ok()) return node;
  // No other thread can reach the node before the handle is returned, so
  // it goes straight from kQueued to kArmed, never through a lane.
  (*node)->ArmUnpublished();
  // So that a cancel() on this thread settles it at once (CancelOnOwner()).
  (*node)->next.store(TimeoutNode::OwnerTag(), std::memory_order_relaxed);
  if (!in_advance_) {
    driver_.FileForLater(*node);
    return node;
  }
  try {
    deferred_.push_back(*node);
  } catch (const std::bad_alloc&) {
    (*node)->task().Reset();
    delete *node;
    ReleaseOwnSlot();
    return absl::ResourceExhaustedError(
        "newTimeout: out of memory for the timeout");
  }
  return node;
}

void LocalEngine::Expedite(TimeoutNode* node) {
  if (shared_.closed()) return;
  try {
    expedited_.push_back(node);
  } catch (const std::bad_alloc&) {
    return;
  }
  node->Ref();
}

bool LocalEngine::HasExpedited() {
  size_t kept = 0;
  for (TimeoutNode* node : expedited_) {
    if (Wheel::Linked(node)) {
      expedited_[kept++] = node;
    } else {
      node->Unref();
    }
  }
  expedited_.resize(kept);
  return kept > 0;
}

void LocalEngine::ClearExpedited() {
  for (TimeoutNode* node : expedited_) node->Unref();
  expedited_.clear();
}

void LocalEngine::RunExpedited(int64_t now) {
  if (expedited_.empty()) return;
  // What a resumed coroutine expedites now waits for the next Advance().
  const std::vector<TimeoutNode*> nodes = std::exchange(expedited_, {});
  for (TimeoutNode* node : nodes) {
    // After a task stopped the timer, the collection takes what is left.
    if (!stopping()) driver_.RunNow(node, now);
    node->Unref();
  }
}

void LocalEngine::TakeNotices() {
  while (!intake_.TakeNotices()) {
  }
  if (sweeper_.purge_pending()) sweeper_.PurgeCancelled();
}

int64_t LocalEngine::Advance() {
  if (in_advance_ || shared_.closed()) return 0;
  const int64_t now = shared_.NowNanos();
  const int64_t ran_before = counters_.expired();
  TakeNotices();
  in_advance_ = true;
  // The driver works in slices (WheelDriver::kSliceBudget); with no queues
  // to serve in between, go on until it is done, or a task stopped the
  // timer. Node memory goes back once it is (as in Pass()).
  if constexpr (TimeoutNode::kPooled) NodePool::HoldFrees();
  while (!driver_.Advance(now) && !stopping()) {
  }
  if constexpr (TimeoutNode::kPooled) NodePool::ReturnHeld();
  if (!stopping()) RunExpedited(now);
  in_advance_ = false;
  for (TimeoutNode* node : deferred_) driver_.FileForLater(node);
  deferred_.clear();
  // A cancelAll() from a task left its nodes in the wheel.
  if (sweeper_.purge_pending()) sweeper_.PurgeCancelled();
  TimerCounters::Bump(counters_.wakeups);
  // Node memory unused for long enough goes back to the kernel
  // (worker/chunk_policy.h): one relaxed load unless a decay is due.
  if constexpr (TimeoutNode::kPooled) NodePool::Depot().MaybeDecay();
  counters_.Publish();  // the runs this call made, for metrics() and `ran`
  const int64_t ran = counters_.expired() - ran_before;
  // A task stopped the timer: collect now, so that the sleeps end as this
  // Advance() returns; the next Stop() returns the rest.
  if (stopping() && !collected_) {
    stopped_ = CollectOwned();
  }
  return ran;
}

bool LocalEngine::Pass(int64_t now) {
  intake_.StartPass();
  if (sweeper_.purge_pending()) sweeper_.PurgeCancelled();
  bool done = intake_.TakeNotices();
  in_advance_ = true;
  // The nodes this pass expires give their memory back once the wheel's
  // walk is over, in this pass or a later one (CellPool, "Holding frees"):
  // the last run of a burst does not wait for the depot's bookkeeping.
  if constexpr (TimeoutNode::kPooled) NodePool::HoldFrees();
  done &= intake_.TakeNew(now);
  driver_.FlushRefiles();
  // An overdue node run by TakeNew() may have stopped the timer.
  bool walked = true;
  if (!stopping()) {
    walked = driver_.Advance(now, done);
    done &= walked;
  }
  in_advance_ = false;
  // No task runs in the rest of the pass: what this one ran goes to
  // metrics() now, before the worker sleeps or stops.
  counters_.Publish();
  if constexpr (TimeoutNode::kPooled) {
    if (walked || stopping()) NodePool::ReturnHeld();
  }
  if (stopping()) return false;
  // Fault node memory in ahead of the producers, and give back what has
  // gone unused for long enough (worker/chunk_policy.h): a relaxed load each
  // unless there is work. A reserve still short after this pass's share
  // makes the next pass start at once, like any other budget.
  if constexpr (TimeoutNode::kPooled) {
    if (NodePool::Depot().Replenish()) done = false;
    NodePool::Depot().MaybeDecay();
  }
  return done;
}

int64_t LocalEngine::NextWakeupNanos() {
  if (shared_.closed()) return INT64_MAX;
  if (in_advance_) return shared_.NowNanos();
  TakeNotices();
  if (HasExpedited()) return shared_.NowNanos();
  return driver_.PlanWake(/*now_tick_too=*/false).wake_at;
}

int64_t LocalEngine::CancelAll() {
  // After stop() (from a task too): what is pending is stop()'s to return.
  if (shared_.closed()) return 0;
  // What tasks of a running Advance() scheduled is not in the wheel yet:
  // the sweeper finds it among the nodes waiting to be filed, and leaves
  // only library timeouts (sleeps) there, which the driver files when its
  // walk ends.
  std::vector<TimeoutNode*>& refiles = driver_.refiles();
  refiles.insert(refiles.end(), deferred_.begin(), deferred_.end());
  deferred_.clear();
  const int64_t cancelled = sweeper_.CancelAll();
  if (!in_advance_) sweeper_.PurgeCancelled();
  return cancelled;
}

LocalEngine::StoppedNodes LocalEngine::Stop() {
  shared_.Close();
  if (in_advance_) {
    RequestStop();
    return {};
  }
  ClearExpedited();
  // After a stop() from a task, Advance() collected what was left.
  if (collected_) return std::exchange(stopped_, {});
  return CollectOwned();
}

}  // namespace tickwheel::internal
