// The worker loop: passes, sleeping, notices, transfers and expiry. The
// producer side is worker_schedule.cc, stop() and cancelAll() worker_stop.cc.

#include "tickwheel/worker/worker.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/base/interleave.h"
#include "tickwheel/base/logging.h"
#include "tickwheel/base/nanos.h"

namespace tickwheel::internal {
namespace {

// The worker whose loop runs on this thread, if any: set when Run() starts,
// cleared when it ends. Unlike a stored thread id, which a later thread may
// reuse once the worker's thread has exited, it names the running loop.
thread_local const Worker* running_worker = nullptr;

}  // namespace

Worker::Worker(WorkerConfig config)
    : config_(std::move(config)),
      wheel_(config_.ticks_per_wheel, config_.tick_nanos) {
  shared_.owner.store(config_.owner, std::memory_order_relaxed);
  shared_.limited = config_.max_pending_timeouts > 0;
  shared_.waker = this;
  shared_.clock = config_.clock.get();
  shared_.monotonic_clock = config_.monotonic_clock;
  if (within_tick_) wheel_.SortEachTick();
}

Worker::~Worker() {
  // Reached after Shutdown(): the thread is joined, or detached and finished.
  if (thread_.joinable()) thread_.detach();
}

bool Worker::OnWorkerThread() const { return running_worker == this; }

bool Worker::LanesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.lane.Empty()) return false;
  }
  return true;
}

bool Worker::NoticeQueuesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.notices.Empty()) return false;
  }
  return true;
}

bool Worker::QueuesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.lane.Empty() || !shard.queue.Empty()) return false;
  }
  return true;
}

TimeoutNode* Worker::PopNew(SharedTimerState::Shard& shard) {
  while (true) {
    TimeoutNode* node = nullptr;
    switch (shard.lane.Pop(&node)) {
      case SharedTimerState::NodeLane::Popped::kItem:
        return node;
      case SharedTimerState::NodeLane::Popped::kTakenBack:
        // cancel() took it back, and with it our reference.
        queue_traffic_ = true;
        continue;
      case SharedTimerState::NodeLane::Popped::kNotYet:
      case SharedTimerState::NodeLane::Popped::kEmpty:
        return shard.queue.Pop();
    }
  }
}

void Worker::Run() {
  {
    std::string name = config_.thread_name.substr(0, 15);
    pthread_setname_np(pthread_self(), name.c_str());
  }
  running_worker = this;
  start_nanos_ = config_.clock->NowNanos();
  wheel_.SetOrigin(start_nanos_);
  start_ready_.store(true, std::memory_order_release);
  start_ready_.notify_all();
  // On the real clock, the node pool may wake us when its retained memory
  // is due to decay (Sleep() plans for that time; see worker/cell_pool.h).
  // A worker on another clock cannot plan a sleep by the real one: it
  // decays the pool only on passes it makes anyway.
  const bool pool_waker = TimeoutNode::kPooled && config_.monotonic_clock;
  if (pool_waker) NodePool::Depot().AddWaker(&Worker::WakeForPool, this);

  while (!shutdown_.load(std::memory_order_acquire)) {
    if (Pass(config_.clock->NowNanos())) Sleep();
  }
  if (pool_waker) NodePool::Depot().RemoveWaker(this);
  running_worker = nullptr;
  if (finish_on_thread_) {
    // The Timer was destroyed from one of its own tasks; nobody will join us.
    for (const Stopped& s : CollectUnprocessed()) DiscardStopped(s.node);
    MutexLock lock(&wake_mu_);
    sleeper_.reset();
  }
}

void Worker::WakeForPool(void* self) {
  static_cast<Worker*>(self)->WakeForBacklog();
}

void Worker::NoteExpiringTick(int64_t tick, int64_t now) {
  expiring_tick_ = tick;
  ticks_.store(tick, std::memory_order_relaxed);
  if (Rel(now) >= SaturatingMul(tick + 2, config_.tick_nanos)) {
    Bump(catch_up_ticks_);  // processed a full tick or more after its end
  }
}

void Worker::NoteRun(int64_t lateness) {
  Bump(expired_);
  lateness_.Record(lateness);
}

void Worker::DropCancelled(TimeoutNode* node, uint32_t word) {
  if (!(word & TimeoutNode::kNoticed)) node->Unref();
}

// The expiry path, once per expired node: inline into the wheel's sweep
// (Pass) and into TransferPending, so that the claim, the bookkeeping, the
// task call and the node's release are one stretch of code rather than four
// calls, each with its prologue.
[[gnu::always_inline]] inline void Worker::ReleaseAfterRun(TimeoutNode* node,
                                                           bool noticed) {
  // Captures die with the run, not with the handles: with handles left, the
  // task goes now, and the handles keep the node.
  if (!noticed && node->SoleHolder()) {
    delete node;
    return;
  }
  node->task().Reset();
  if (!noticed) node->Unref();
}

[[gnu::always_inline]] inline void Worker::CallTask(TimeoutNode* node) {
  RunLoggingExceptions("a timer task", "the worker goes on",
                       [&] { node->task().Invoke(node, &shared_); });
}

[[gnu::always_inline]] inline void Worker::RunTask(TimeoutNode* node,
                                                   bool noticed) {
  if (config_.task_executor) {
    // The closure needs a reference of its own when the notice queue's pop
    // is to drop the worker's.
    if (noticed) node->Ref();
    HandToExecutor(node);
    return;
  }
  // Lends the worker's reference to the call, then drops it. Kept apart
  // from HandToExecutor() so that the per-timeout path has no closure on its
  // stack (and so no stack-protector check).
  CallTask(node);
  ReleaseAfterRun(node, noticed);
}

[[gnu::always_inline]] inline bool Worker::Expire(TimeoutNode* node,
                                                  int64_t now, int64_t tick) {
  // Never early: the claim compares the deadline the node holds at that
  // moment with the clock reading of the pass, and with the end of the tick
  // being processed, so that a node a reset() moved past it runs in its own
  // tick's turn (timeout_node.h, "Never early").
  const int64_t limit = std::min(now, TickEnd(tick));
  const TimeoutNode::Claim claim =
      node->ClaimToRun(limit, static_cast<bool>(config_.task_executor));
  switch (claim.outcome) {
    case TimeoutNode::ClaimOutcome::kClaimed:
      break;
    case TimeoutNode::ClaimOutcome::kLost:
      // Lost to a cancel() (or cancelAll()) since it was filed.
      DropCancelled(node, claim.word);
      return true;
    case TimeoutNode::ClaimOutcome::kNotDue:
      // A reset() moved the deadline past the limit: file it again.
      refile_.push_back(node);
      // Due later in this same Advance() (a worker catching up): stop the
      // wheel here, so that Pass() files it again before the wheel reaches
      // its tick and then goes on. Filed after the wheel had passed it, it
      // would run a pass late, after timeouts due later than it.
      if (wheel_.DueTickAt(claim.deadline) <= advance_last_tick_) {
        refiled_within_pass_ = true;
        return false;
      }
      return true;
    case TimeoutNode::ClaimOutcome::kSkipped:
      // A periodic run whose previous one is still on the executor.
      node->ScheduleNextRun(
          NextRun(claim.deadline, node->task().PeriodNanos(), now));
      refile_.push_back(node);
      return true;
  }
  if (tick != expiring_tick_) NoteExpiringTick(tick, now);
  if (claim.word & TimeoutNode::kPeriodic) {
    RunPeriodic(node, claim.deadline, now);
    return !shutdown_.load(std::memory_order_acquire);
  }
  // Give the slot back before the task runs: a task that reschedules itself
  // must find its own slot free, even at max_pending_timeouts.
  Release(1);
  NoteRun(SaturatingSub(now, claim.deadline));
  RunTask(node, (claim.word & TimeoutNode::kNoticed) != 0);
  // A stop() or a destroying task ends the pass here; the rest is returned by
  // stop().
  return !shutdown_.load(std::memory_order_acquire);
}

int64_t Worker::NextRun(int64_t due, int64_t period, int64_t now) {
  // The first grid time due + k * period (k >= 1) after now, saturating:
  // runs missed by a whole period or more are skipped. 128-bit arithmetic,
  // since due and now may lie anywhere in the clock's range.
  const __int128 gap = std::max<__int128>(0, __int128{now} - due);
  const __int128 next = __int128{due} + (gap / period + 1) * period;
  return next > INT64_MAX ? INT64_MAX : static_cast<int64_t>(next);
}

void Worker::RunPeriodic(TimeoutNode* node, int64_t due, int64_t now) {
  // Claimed with kBusy: on this thread, out of the wheel (kRunning); with an
  // executor, still filed, marked kInFlight until that run is over.
  const int64_t period = node->task().PeriodNanos();
  SharedTask run = node->task().Share();
  NoteRun(SaturatingSub(now, due));
  if (config_.task_executor) {
    node->ScheduleNextRun(NextRun(due, period, now));
    refile_.push_back(node);
    node->Ref();  // the run's own, dropped when the closure goes
    // Whether the executor runs the closure or drops it, the run is over
    // when the closure goes: kInFlight is cleared then.
    struct InFlight {
      explicit InFlight(TimeoutNode* n) : node(n) {}
      InFlight(InFlight&&) noexcept = default;
      NodeRef node;
      ~InFlight() {
        if (node.get() != nullptr) node.get()->EndExecutorRun();
      }
    };
    RunLoggingExceptions("the task_executor", "that run did not happen", [&] {
      config_.task_executor([in_flight = InFlight(node), run = std::move(run),
                             self = shared_from_this()]() mutable {
        RunLoggingExceptions("a timer task", "the timer goes on", [&] {
          run.Invoke(in_flight.node.get(), &self->shared_);
        });
      });
    });
    return;
  }
  node->ReleaseForRun();
  running_periodic_ = node;
  RunLoggingExceptions("a timer task", "the worker goes on",
                       [&] { run.Invoke(node, &shared_); });
  running_periodic_ = nullptr;
  { SharedTask done = std::move(run); }  // the callable may go with it
  // Back into the wheel at the next run (or at the deadline a reset() set
  // during the run), unless a cancel() made the run its last.
  uint32_t word;
  if (node->EndInlineRun(NextRun(due, period, config_.clock->NowNanos()),
                         &word)) {
    refile_.push_back(node);
  } else {
    DropCancelled(node, word);
  }
}

void Worker::FlushRefiles() {
  for (TimeoutNode* node : refile_) {
    node->filed = node->deadline.load(std::memory_order_relaxed);
    wheel_.Insert(node);
  }
  refile_.clear();
}

bool Worker::Pass(int64_t now) {
  queue_traffic_ = false;
  ServeCancelAll();
  if (purge_) PurgeCancelled();
  bool done = ProcessNotices();
  done &= TransferPending(now);
  FlushRefiles();
  // An overdue node run by TransferPending() may have stopped the timer.
  if (shutdown_.load(std::memory_order_acquire)) return false;
  // Tick k may be processed once its end, start + (k + 1) * tick, has
  // passed.
  const int64_t last_tick = Rel(now) / config_.tick_nanos - 1;
  last_advance_now_ = now;
  advance_last_tick_ = last_tick;
  // A timeout moved to a later tick of this same advance stops the wheel
  // (see Expire()): file it again and go on, in the same pass, so that what
  // tasks schedule meanwhile waits for the pass's end as it always does. A
  // bounded number of times: then the next pass goes on.
  bool advanced = false;
  for (int restarts = 0; !advanced && restarts < kMovedRestartsPerPass;
       ++restarts) {
    refiled_within_pass_ = false;
    advanced = wheel_.Advance(last_tick, kSliceBudget, [&](TimeoutNode* node) {
      return Expire(node, now, wheel_.elapsed());
    });
    FlushRefiles();
    if (!refiled_within_pass_ || shutdown_.load(std::memory_order_acquire)) {
      break;
    }
  }
  done &= advanced;
  advance_last_tick_ = INT64_MIN;
  if (within_tick_ && done && !shutdown_.load(std::memory_order_acquire)) {
    done &= ExpireWithinTick(now);
  }
  ticks_.store(wheel_.elapsed(), std::memory_order_relaxed);
  // Fault node memory in ahead of the producers, and give back what has
  // gone unused for long enough (worker/cell_pool.h): a relaxed load each
  // unless there is work. A reserve still short after this pass's share
  // makes the next pass start at once, like any other budget.
  if constexpr (TimeoutNode::kPooled) {
    if (NodePool::Depot().Replenish()) done = false;
    NodePool::Depot().MaybeDecay();
  }
  return done;
}

bool Worker::ExpireWithinTick(int64_t now) {
  const int64_t tick = wheel_.elapsed();
  if (wheel_.EarliestFiledAt(tick) > now) return true;  // kNever: nothing
  // A node a reset() moved past now is filed again by Expire()'s claim.
  const bool done = wheel_.ExpireFiledBy(
      now, kSliceBudget,
      [&](TimeoutNode* node) { return Expire(node, now, tick); });
  FlushRefiles();
  return done;
}

int64_t Worker::PlanWake(int64_t next, int64_t* limit) {
  // A node is due before tick `next` iff its deadline is at or before the
  // start of tick `next`: producers compare clock readings, without
  // dividing.
  *limit = SaturatingAdd(start_nanos_, SaturatingMul(next, config_.tick_nanos));
  int64_t wake_at =
      SaturatingAdd(start_nanos_, SaturatingMul(next + 1, config_.tick_nanos));
  if (!within_tick_) return wake_at;
  // Wake for the earliest deadline due then, plus the slack, if that comes
  // before the tick ends: every deadline within the slack of it runs in the
  // same wake-up. A new deadline wakes us if waiting for this plan would
  // make it later than its own slack allows. The limit stays at or above
  // the start of tick `next`, since the slack is below one tick.
  const int64_t first = wheel_.EarliestFiledAt(next);
  if (first != Wheel::kNever) {
    wake_at = std::min(wake_at, SaturatingAdd(first, config_.slack_nanos));
  }
  *limit = std::max(*limit, SaturatingSub(wake_at, config_.slack_nanos + 1));
  return wake_at;
}

void Worker::Sleep() {
  int64_t next = wheel_.NextWorkTick();
  // Housekeeping: while timeouts are being scheduled or cancelled, come back
  // at the end of the current tick to drain the queues, so that cancelled
  // nodes and their captures are released within about a tick. Without
  // traffic, sleep until real work is due, however far away.
  // A notice queue that still reads non-empty holds nodes that Pop() could
  // not reach yet (a push between its exchange and its link store): come
  // back at the end of the tick for them too, since no push below the
  // backlog bound wakes us.
  if (queue_traffic_ || !NoticeQueuesEmpty()) {
    next = std::min(next, wheel_.elapsed());
  }
  int64_t limit = INT64_MAX;
  // A tick end the clock cannot express (past INT64_MAX) never comes: sleep
  // until woken, which is what the deadline INT64_MAX means to a Sleeper.
  const int64_t wake_at =
      next == Wheel::kNever ? INT64_MAX : PlanWake(next, &limit);
  wake_limit_.store(limit, std::memory_order_seq_cst);
  // Dekker with Schedule(): a node pushed before our store is seen here; one
  // pushed after it sees our plan and wakes us if it is due earlier.
  TICKWHEEL_INTERLEAVE_POINT();
  if (!QueuesEmpty() || cancel_all_waiting_.load(std::memory_order_seq_cst)) {
    wake_limit_.store(kAwake, std::memory_order_seq_cst);
    return;
  }
  // The pool's decay, on the real clock: one wake-up when retained memory
  // is due to go, none once the pool is down to its floor. Read after the
  // plan's seq_cst store: a Give() that makes a decay due after this load
  // sees the plan and wakes us (CellDepot::NextDecayNanos()).
  int64_t sleep_until = wake_at;
  if constexpr (TimeoutNode::kPooled) {
    if (config_.monotonic_clock) {
      sleep_until = std::min(sleep_until, NodePool::Depot().NextDecayNanos());
    }
  }
  OwnSleeper().SleepUntil(sleep_until);
  Bump(wakeups_);
  wake_limit_.store(kAwake, std::memory_order_seq_cst);
}

bool Worker::ProcessNotices() {
  int budget = kSliceBudget;
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
          if (Wheel::Linked(node)) wheel_.Remove(node);
          node->filed = node->deadline.load(std::memory_order_relaxed);
          wheel_.Insert(node);
          break;
        case TimeoutState::kStopped:
        case TimeoutState::kStoppedTaken:
          break;  // stop() collected it, and its reference
        default:  // cancelled, or expired while on the queue
          if (Wheel::Linked(node)) wheel_.Remove(node);
          node->Unref();  // the worker's reference
      }
    }
    if (popped == 0) continue;
    queue_traffic_ = true;
    shard.notice_backlog.fetch_sub(popped, std::memory_order_relaxed);
  }
  return budget > 0;
}

bool Worker::TransferPending(int64_t now) {
  // Round-robin over the shards, a share of the budget each, so that one
  // busy producer cannot starve the others.
  constexpr int kShards = SharedTimerState::kShards;
  constexpr int kShare = kSliceBudget / kShards;
  bool done = true;
  for (int i = 0; i < kShards; ++i) {
    auto& shard = shared_.shards[(next_shard_ + i) % kShards];
    shard.lane.Refresh();
    int n = 0;
    for (; n < kShare; ++n) {
      TimeoutNode* node = PopNew(shard);
      if (node == nullptr) break;
      queue_traffic_ = true;
      if (!node->Arm()) {
        // Cancelled while queued: nobody else will hand it to us.
        node->Unref();
        continue;
      }
      // Overdue and already due when the last Advance() looked at the clock:
      // it was queued before that pass and missed its tick only because the
      // worker had not reached it yet (the worker woke late, or a backlog
      // outlasted the tick). Filed, it would wait for the end of the current
      // tick; it is due, so it runs now, as part of its own (ended) tick.
      // A node scheduled by a task during that pass has a deadline at or
      // after the pass's clock reading, so it is filed into the current tick
      // as before: a task that reschedules itself with no delay runs once a
      // tick, not in a loop.
      // The deadline test comes first: it is false for nearly every node, so
      // the due tick (Insert() computes it again) is rarely computed twice.
      node->filed = node->deadline.load(std::memory_order_relaxed);
      if (node->filed < last_advance_now_) {
        if (const int64_t due = wheel_.DueTickOf(node);
            due < wheel_.elapsed()) {
          if (!Expire(node, now, due)) return false;  // stop(), or a task
          continue;                                   // destroyed the timer
        }
      }
      wheel_.Insert(node);
    }
    if (n == kShare) done = false;
  }
  next_shard_ = (next_shard_ + 1) % kShards;
  return done;
}

void Worker::HandToExecutor(TimeoutNode* node) {
  // The closure takes the worker's reference, and keeps the Worker (and so
  // the shared state behind Timeout::timer()) alive: an executor may run it
  // after ~Timer, when timer() then returns nullptr.
  RunLoggingExceptions("the task_executor", "that task did not run", [&] {
    config_.task_executor([ref = NodeRef(node), self = shared_from_this()]() {
      self->CallTask(ref.get());
      // Captures die with the run, not with the handles.
      ref.get()->task().Reset();
    });
  });
}

}  // namespace tickwheel::internal
