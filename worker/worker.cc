#include "tickwheel/worker/worker.h"

#include <pthread.h>

#include <algorithm>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/worker/interleave.h"
#include "tickwheel/worker/logging.h"
#include "tickwheel/worker/nanos.h"

namespace tickwheel::internal {
namespace {

// The worker whose loop runs on this thread, if any: set when Run() starts,
// cleared when it ends. Unlike a stored thread id, which a later thread may
// reuse once the worker's thread has exited, it names the running loop.
thread_local const Worker* running_worker = nullptr;

}  // namespace

absl::Status StoppedError(std::string_view call) {
  return absl::FailedPreconditionError(fmt::format(
      "{}: the timer has been stopped; create a new Timer", call));
}

Worker::Worker(WorkerConfig config)
    : config_(std::move(config)),
      wheel_(config_.ticks_per_wheel, config_.tick_nanos) {
  shared_.owner.store(config_.owner, std::memory_order_relaxed);
  shared_.limited = config_.max_pending_timeouts > 0;
  shared_.waker = this;
}

bool Worker::Close() {
  bool first = false;
  for (auto& shard : shared_.shards) {
    first |= !(shard.pending_word.fetch_or(SharedTimerState::kClosed,
                                           std::memory_order_acq_rel) &
               SharedTimerState::kClosed);
  }
  return first;
}

bool Worker::LanesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.lane.Empty()) return false;
  }
  return true;
}

bool Worker::CancellationQueuesEmpty() const {
  for (const auto& shard : shared_.shards) {
    if (!shard.cancelled.Empty()) return false;
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

Worker::~Worker() {
  // Reached after Shutdown(): the thread is joined, or detached and finished.
  if (thread_.joinable()) thread_.detach();
}

bool Worker::OnWorkerThread() const { return running_worker == this; }

absl::StatusOr<TimeoutNode*> Worker::Schedule(TaskEmplacer emplace,
                                              void* callable,
                                              absl::Duration delay) {
  // The clock first: the vDSO orders its TSC read (lfence or rdtscp), which
  // would otherwise wait for the RMW below to complete. Reading it before
  // the reservation is still reading it during this call, so the deadline is
  // never early.
  const int64_t now = config_.monotonic_clock ? MonotonicNanos()
                                              : config_.clock->NowNanos();
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
      NewNode(emplace, callable, Deadline(now, delay), count);
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
    } while (!count.compare_exchange_weak(
        word, word + SharedTimerState::kOne, std::memory_order_relaxed));
  } else {
    word = count.fetch_add(SharedTimerState::kOne, std::memory_order_relaxed);
    if (word & SharedTimerState::kClosed) {
      count.fetch_sub(SharedTimerState::kOne, std::memory_order_release);
    }
  }
  if (word & SharedTimerState::kClosed) return StoppedError("newTimeout");
  return absl::OkStatus();
}

int64_t Worker::Deadline(int64_t now, absl::Duration delay) const {
  // Deadlines count from startTime, so they stay small and exact; a huge
  // delay saturates at INT64_MAX nanoseconds (292 years) instead of wrapping
  // into the past. A `now` read before the worker started precedes
  // startTime: the deadline then counts from startTime, later.
  return SaturatingAdd(std::max<int64_t>(0, now - start_nanos_),
                       DelayNanos(delay));
}

absl::StatusOr<TimeoutNode*> Worker::NewNode(TaskEmplacer emplace,
                                             void* callable, int64_t deadline,
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
  try {
    emplace(node->task(), callable);
  } catch (...) {  // the callable's own copy or move threw: the caller's
    delete node;
    give_back();
    throw;
  }
  node->refs_state.store(TimeoutNode::Pack(2, TimeoutState::kQueued),
                         std::memory_order_relaxed);  // handle + worker
  node->deadline = deadline;
  return node;
}

void Worker::Publish(TimeoutNode* node, int shard) {
  // The fast lane if it has room, else the queue. Either claim (a seq_cst
  // CAS or exchange) pairs with Sleep()'s check.
  auto& my_shard = shared_.shards[shard];
  const int64_t deadline = node->deadline;  // the worker's once published
  TICKWHEEL_INTERLEAVE_POINT();
  const int64_t cell = my_shard.lane.Claim();
  if (cell < 0) {
    // The lane is full: kLaneCapacity nodes wait for a worker that sleeps
    // (or runs behind). Overflowing into the queue wakes it whatever the
    // deadline, so that what waits, cancelled nodes included, is bounded by
    // a count rather than by the time to the next deadline.
    my_shard.queue.Push(node);
    WakeForBacklog();
    return;
  }
  node->SetLaneCell(my_shard.lane.Cell(cell));
  my_shard.lane.Publish(cell, node);
  // Wake the worker only if it sleeps past this node's tick. The first
  // producer to need it claims the wake-up (kAwake): the woken worker drains
  // the queue before it plans again, so later producers need not wake it.
  TICKWHEEL_INTERLEAVE_POINT();
  int64_t limit = wake_limit_.load(std::memory_order_seq_cst);
  while (deadline <= limit) {
    if (wake_limit_.compare_exchange_weak(limit, kAwake,
                                          std::memory_order_seq_cst)) {
      WakeWorker();
      break;
    }
  }
}

void Worker::WakeForBacklog() {
  int64_t limit = wake_limit_.load(std::memory_order_seq_cst);
  while (limit != kAwake) {
    if (wake_limit_.compare_exchange_weak(limit, kAwake,
                                          std::memory_order_seq_cst)) {
      WakeWorker();
      return;
    }
  }
}

void Worker::WakeWorker() {
  MutexLock lock(&wake_mu_);
  if (sleeper_ != nullptr) sleeper_->Wake();
}

absl::Status Worker::StartThread() {
  MutexLock lock(&start_mu_);
  if (started_.load(std::memory_order_relaxed)) return absl::OkStatus();
  if (shared_.shards[0].pending_word.load(std::memory_order_relaxed) &
      SharedTimerState::kClosed) {
    return StoppedError("newTimeout");
  }
  SetSleeperBeforeStart(config_.clock->NewSleeper());
  try {
    thread_ = std::thread([self = shared_from_this()] { self->Run(); });
  } catch (const std::system_error& e) {
    SetSleeperBeforeStart(nullptr);
    return absl::ResourceExhaustedError(
        fmt::format("newTimeout: cannot start the worker thread: {}", e.what()));
  }
  // newTimeout() must not compute a deadline before startTime exists.
  start_ready_.wait(false, std::memory_order_acquire);
  started_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void Worker::Run() {
  {
    std::string name = config_.thread_name.substr(0, 15);
    pthread_setname_np(pthread_self(), name.c_str());
  }
  running_worker = this;
  start_nanos_ = config_.clock->NowNanos();
  start_ready_.store(true, std::memory_order_release);
  start_ready_.notify_all();

  while (!shutdown_.load(std::memory_order_acquire)) {
    if (Pass(config_.clock->NowNanos() - start_nanos_)) Sleep();
  }
  running_worker = nullptr;
  if (finish_on_thread_) {
    // The Timer was destroyed from one of its own tasks; nobody will join us.
    DiscardStopped(CollectUnprocessed());
    MutexLock lock(&wake_mu_);
    sleeper_.reset();
  }
}

void Worker::NoteExpiringTick(int64_t tick, int64_t now) {
  expiring_tick_ = tick;
  ticks_.store(tick, std::memory_order_relaxed);
  if (now >= SaturatingMul(tick + 2, config_.tick_nanos)) {
    Bump(catch_up_ticks_);  // processed a full tick or more after its end
  }
}

// The expiry path, once per expired node: inline into the wheel's sweep
// (Pass) and into TransferPending, so that the claim, the bookkeeping, the
// task call and the node's release are one stretch of code rather than four
// calls, each with its prologue.
[[gnu::always_inline]] inline void Worker::ReleaseAfterRun(TimeoutNode* node) {
  // Captures die with the run, not with the handles: with handles left, the
  // task goes now, and the handles keep the node.
  if (node->SoleHolder()) {
    delete node;
    return;
  }
  node->task().Reset();
  node->Unref();
}

[[gnu::always_inline]] inline void Worker::CallTask(TimeoutNode* node) {
  RunLoggingExceptions("a timer task", "the worker goes on",
                       [&] { node->task().Invoke(node, &shared_); });
}

[[gnu::always_inline]] inline void Worker::RunTask(TimeoutNode* node) {
  if (config_.task_executor) {
    HandToExecutor(node);
    return;
  }
  // Lends the worker's reference to the call, then drops it. Kept apart
  // from HandToExecutor() so that the per-timeout path has no closure on its
  // stack (and so no stack-protector check).
  CallTask(node);
  ReleaseAfterRun(node);
}

[[gnu::always_inline]] inline bool Worker::Expire(TimeoutNode* node,
                                                  int64_t now, int64_t tick) {
  if (!node->TransitionHeld(TimeoutState::kArmed, TimeoutState::kExpired)) {
    // Lost to a cancel() since the last drain: the node is on the
    // cancellation queue, and ProcessCancelled() drops our reference.
    return true;
  }
  // Give the slot back before the task runs: a task that reschedules itself
  // must find its own slot free, even at max_pending_timeouts.
  Release(1);
  Bump(expired_);
  // Bookkeeping is per tick, not per node.
  if (tick != expiring_tick_) NoteExpiringTick(tick, now);
  const int64_t lateness = now - node->deadline;
  if (lateness > worst_lateness_nanos_.load(std::memory_order_relaxed)) {
    worst_lateness_nanos_.store(lateness, std::memory_order_relaxed);
  }
  RunTask(node);
  // A stop() or a destroying task ends the pass here; the rest is returned by
  // stop().
  return !shutdown_.load(std::memory_order_acquire);
}

bool Worker::Pass(int64_t now) {
  queue_traffic_ = false;
  bool done = ProcessCancelled();
  done &= TransferPending(now);
  // An overdue node run by TransferPending() may have stopped the timer.
  if (shutdown_.load(std::memory_order_acquire)) return false;
  // Tick k may be processed once its end, (k + 1) * tick, has passed.
  const int64_t last_tick = now / config_.tick_nanos - 1;
  last_advance_now_ = now;
  done &= wheel_.Advance(last_tick, kSliceBudget,
                         [&](TimeoutNode* node) {
                           return Expire(node, now, wheel_.elapsed());
                         });
  ticks_.store(wheel_.elapsed(), std::memory_order_relaxed);
  // Fault in node memory ahead of the producers while we have the time
  // (worker/cell_pool.h): a relaxed load unless they are close to a new chunk.
  if constexpr (TimeoutNode::kPooled) NodePool::Depot().Replenish();
  return done;
}

void Worker::Sleep() {
  int64_t next = wheel_.NextWorkTick();
  // Housekeeping: while timeouts are being scheduled or cancelled, come back
  // at the end of the current tick to drain the queues, so that cancelled
  // nodes and their captures are released within about a tick. Without
  // traffic, sleep until real work is due, however far away.
  // A cancellation queue that still reads non-empty holds nodes that Pop()
  // could not reach yet (a cancel() between its exchange and its link
  // store): come back at the end of the tick for them too, since no cancel()
  // below the backlog bound wakes us.
  if (queue_traffic_ || !CancellationQueuesEmpty()) {
    next = std::min(next, wheel_.elapsed());
  }
  // A node is due before tick `next` iff DueTick(deadline) < next, that is
  // iff deadline <= next * tick: producers compare without dividing.
  wake_limit_.store(
      next == Wheel::kNever ? INT64_MAX
                            : SaturatingMul(next, config_.tick_nanos),
      std::memory_order_seq_cst);
  // Dekker with Schedule(): a node pushed before our store is seen here; one
  // pushed after it sees our plan and wakes us if it is due earlier.
  TICKWHEEL_INTERLEAVE_POINT();
  if (!QueuesEmpty()) {
    wake_limit_.store(kAwake, std::memory_order_seq_cst);
    return;
  }
  // A tick end the clock cannot express (past INT64_MAX) never comes: sleep
  // until woken, which is what the deadline INT64_MAX means to a Sleeper.
  const int64_t wake_at =
      next == Wheel::kNever
          ? INT64_MAX
          : SaturatingAdd(start_nanos_,
                          SaturatingMul(next + 1, config_.tick_nanos));
  OwnSleeper().SleepUntil(wake_at);
  Bump(wakeups_);
  wake_limit_.store(kAwake, std::memory_order_seq_cst);
}

bool Worker::ProcessCancelled() {
  int budget = kSliceBudget;
  for (auto& shard : shared_.shards) {
    int64_t popped = 0;
    while (budget > 0) {
      TimeoutNode* node = shard.cancelled.Pop();
      if (node == nullptr) break;
      // Only armed nodes come here. Still linked unless Advance() already
      // took it out and lost the race to cancel() in Expire().
      if (Wheel::Linked(node)) wheel_.Remove(node);
      node->Unref();  // the worker's reference; cancel() destroyed the task
      ++popped;
      --budget;
    }
    if (popped == 0) continue;
    queue_traffic_ = true;
    shard.cancel_backlog.fetch_sub(popped, std::memory_order_relaxed);
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
      if (!node->TransitionHeld(TimeoutState::kQueued,
                                TimeoutState::kArmed)) {
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
      if (node->deadline < last_advance_now_) {
        if (const int64_t due = wheel_.DueTickOf(node); due < wheel_.elapsed()) {
          if (!Expire(node, now, due)) return false;  // stop(), or a task
          continue;                                    // destroyed the timer
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

std::vector<TimeoutNode*> Worker::CollectUnprocessed() {
  // (deadline, node) pairs: sorting them touches no node, which matters with a
  // million of them.
  std::vector<std::pair<int64_t, TimeoutNode*>> stopped;
  stopped.reserve(static_cast<size_t>(wheel_.size()));
  auto take = [&](TimeoutNode* node, TimeoutState from) {
    if (node->Transition(from, TimeoutState::kStopped)) {
      stopped.emplace_back(node->deadline, node);
      Release(1);
    } else if (from == TimeoutState::kQueued) {
      node->Unref();  // cancelled while queued
    }
    // An armed node that lost to cancel() is on the cancellation queue, where
    // ProcessCancelled() drops our reference.
  };
  wheel_.DrainAll([&](TimeoutNode* node) { take(node, TimeoutState::kArmed); });
  // Every slot still counted belongs to a node on its way into the pending
  // queue (its newTimeout() is between reserving and pushing) or to a cancel()
  // between its push and its release. Wait them out.
  while (true) {
    for (auto& shard : shared_.shards) {
      shard.lane.Refresh();
      while (TimeoutNode* node = PopNew(shard)) {
        take(node, TimeoutState::kQueued);
      }
    }
    while (!ProcessCancelled()) {
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
  while (!ProcessCancelled()) {
  }
  // Earliest deadline first, the order in which they would have run; ties in
  // the order they were found.
  std::stable_sort(stopped.begin(), stopped.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<TimeoutNode*> result;
  result.reserve(stopped.size());
  for (const auto& entry : stopped) result.push_back(entry.second);
  return result;
}

void Worker::DiscardStopped(const std::vector<TimeoutNode*>& nodes) {
  for (TimeoutNode* node : nodes) {
    // Nobody else holds these nodes yet: the task goes unrun.
    node->Transition(TimeoutState::kStopped, TimeoutState::kStoppedTaken);
    node->task().Reset();
    node->Unref();
  }
}

absl::StatusOr<std::vector<TimeoutNode*>> Worker::Stop() {
  if (OnWorkerThread()) {
    return absl::FailedPreconditionError(
        "stop: called from the timer's own worker thread (inside a task, or a "
        "task_executor that runs tasks inline); call stop() from another "
        "thread");
  }
  MutexLock lock(&stop_mu_);
  if (!Close()) return std::vector<TimeoutNode*>();  // already stopped
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
  std::vector<TimeoutNode*> unprocessed = CollectUnprocessed();
  MutexLock wake_lock(&wake_mu_);
  sleeper_.reset();  // unregisters from a ManualClock
  return unprocessed;
}

void Worker::Shutdown() {
  // From now on Timeout::timer() answers nullptr.
  shared_.owner.store(nullptr, std::memory_order_release);
  if (!OnWorkerThread()) {
    absl::StatusOr<std::vector<TimeoutNode*>> unprocessed = Stop();
    if (unprocessed.ok()) DiscardStopped(*unprocessed);
    return;
  }
  // Destroyed from inside one of our own tasks: we cannot join ourselves.
  MutexLock lock(&stop_mu_);
  if (!Close()) return;
  finish_on_thread_ = true;
  shutdown_.store(true, std::memory_order_release);
  thread_.detach();
}

WorkerCounters Worker::Counters() const {
  WorkerCounters c;
  c.pending = pending();
  c.expired = expired_.load(std::memory_order_relaxed);
  c.cancelled = shared_.CancelCount();
  c.ticks = ticks_.load(std::memory_order_relaxed);
  c.catch_up_ticks = catch_up_ticks_.load(std::memory_order_relaxed);
  c.wakeups = wakeups_.load(std::memory_order_relaxed);
  c.worst_lateness_nanos =
      worst_lateness_nanos_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace tickwheel::internal
