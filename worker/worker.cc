// The Worker: newTimeout()'s side (reserve, build, publish, wake), the
// thread's loop around LocalEngine::Pass(), and its life cycle (stop(),
// ~Timer, cancelAll() from other threads).

#include "tickwheel/worker/worker.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/base/interleave.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/new_node.h"

namespace tickwheel::internal {
namespace {

// The worker whose loop runs on this thread, if any: set when Run() starts,
// cleared when it ends. Unlike a stored thread id, which a later thread may
// reuse once the worker's thread has exited, it names the running loop.
thread_local const Worker* running_worker = nullptr;

}  // namespace

Worker::Worker(WorkerConfig config)
    : thread_name_(std::move(config.thread_name)),
      engine_(std::move(config), &planner_) {}

Worker::~Worker() {
  // Reached after Shutdown(): the thread is joined, or detached and finished.
  if (thread_.joinable()) thread_.detach();
}

bool Worker::OnWorkerThread() const { return running_worker == this; }

// ---- newTimeout()'s side ----

absl::StatusOr<TimeoutNode*> Worker::Schedule(TaskEmplacer emplace,
                                              void* callable,
                                              const DeadlineSpec& when) {
  const LocalEngineConfig& config = engine_.config();
  // The clock first: the vDSO orders its TSC read (lfence or rdtscp), which
  // would otherwise wait for the RMW below to complete. Reading it before
  // the reservation is still reading it during this call, so the deadline is
  // never early.
  const int64_t now =
      config.monotonic_clock ? MonotonicNanos() : config.clock->NowNanos();
  const int shard = SharedTimerState::ThisThreadShard();
  std::atomic<int64_t>& count = engine_.shared()->CountWord(shard);
  if (absl::Status s = ReserveSlot(count, config.max_pending_timeouts);
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
      emplace, callable, DeadlineFor(now, engine_.origin(), when), when, count);
  if (node.ok()) Publish(*node, shard);
  return node;
}

void Worker::Publish(TimeoutNode* node, int shard) {
  // The fast lane if it has room, else the queue. Either claim (a seq_cst
  // CAS or exchange) pairs with Sleep()'s check.
  auto& my_shard = engine_.shared()->shards[shard];
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
    if (engine_.config().monotonic_clock && NodePool::Depot().ReserveWanted()) {
      planner_.WakeForBacklog();
      return;
    }
  }
  planner_.WakeIfSleepingPast(deadline);
}

absl::Status Worker::StartThread() {
  MutexLock lock(&start_mu_);
  if (started_.load(std::memory_order_relaxed)) return absl::OkStatus();
  if (engine_.shared()->closed()) return StoppedError("newTimeout");
  planner_.SetSleeperBeforeStart(engine_.config().clock->NewSleeper());
  engine_.SetKeepAlive(weak_from_this());
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

// ---- The thread ----

void Worker::Run() {
  const LocalEngineConfig& config = engine_.config();
  pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
  // The kernel may end a timed sleep late by the thread's timer slack, 50 us
  // by default, so that it can batch wake-ups. A timer asked for less
  // (slack 0: each deadline on its own) gets the same from the kernel, on
  // the real clock, whose sleeps are the kernel's. 0 would restore the
  // default: 1 ns is the least.
  if (config.monotonic_clock && config.shape.slack_nanos < kKernelSlackNanos) {
    prctl(PR_SET_TIMERSLACK,
          static_cast<unsigned long>(
              std::max<int64_t>(1, config.shape.slack_nanos)),
          0, 0, 0);
  }
  running_worker = this;
  engine_.Start(config.clock->NowNanos());
  start_ready_.store(true, std::memory_order_release);
  start_ready_.notify_all();
  // On the real clock, the node pool may wake us when its retained memory
  // is due to decay (Sleep() plans for that time; see worker/chunk_policy.h).
  // A worker on another clock cannot plan a sleep by the real one: it
  // decays the pool only on passes it makes anyway.
  const bool pool_waker = TimeoutNode::kPooled && config.monotonic_clock;
  if (pool_waker) NodePool::Depot().AddWaker(&Worker::WakeForPool, this);

  while (!engine_.stopping()) {
    cancel_all_.Serve([this] { return engine_.CancelAll(); });
    if (engine_.Pass(config.clock->NowNanos())) Sleep();
  }
  if (pool_waker) NodePool::Depot().RemoveWaker(this);
  running_worker = nullptr;
  if (finish_on_thread_) {
    // The Timer was destroyed from one of its own tasks; nobody will join us.
    StoppedNodes library;
    LocalEngine::Discard(engine_.Collect(&library));
    LocalEngine::Discard(library);
    planner_.DestroySleeper();
  }
}

void Worker::WakeForPool(void* self) {
  static_cast<Worker*>(self)->planner_.WakeForBacklog();
}

void Worker::Sleep() {
  // Housekeeping: while timeouts are being scheduled or cancelled, the plan
  // comes back at the end of the current tick to drain the queues, so that
  // cancelled nodes and their captures are released within about a tick.
  // Without traffic, sleep until real work is due, however far away. A
  // notice queue that still reads non-empty holds nodes that Pop() could
  // not reach yet (a push between its exchange and its link store): come
  // back for them too, since no push below the backlog bound wakes us.
  const WheelDriver::WakePlan plan = engine_.PlanSleep();
  // The pool's decay, on the real clock: one wake-up when retained memory
  // is due to go, none once the pool is down to its floor. Read after the
  // plan is published (in Sleep()'s check): a Give() that makes a decay due
  // after this load sees the plan and wakes us (CellDepot::NextDecayNanos()).
  const bool slept = planner_.Sleep(
      plan.limit,
      [&] { return !engine_.InboxEmpty() || cancel_all_.waiting(); },
      [&] {
        int64_t until = plan.wake_at;
        if constexpr (TimeoutNode::kPooled) {
          if (engine_.config().monotonic_clock) {
            until = std::min(until, NodePool::Depot().NextDecayNanos());
          }
        }
        return until;
      });
  if (slept) engine_.NoteWakeup();
}

// ---- stop(), ~Timer, cancelAll() ----

absl::StatusOr<Worker::StoppedNodes> Worker::Stop() {
  if (OnWorkerThread()) {
    return absl::FailedPreconditionError(
        "stop: called from the timer's own worker thread (inside a task, or a "
        "task_executor that runs tasks inline); call stop() from another "
        "thread");
  }
  StoppedNodes unprocessed;
  StoppedNodes library;
  {
    MutexLock lock(&stop_mu_);
    if (!engine_.shared()->Close()) return StoppedNodes();  // already stopped
    // After this, no thread can start: StartThread() checks the closed bit
    // under start_mu_.
    bool started;
    {
      MutexLock start_lock(&start_mu_);
      started = started_.load(std::memory_order_relaxed);
    }
    if (started) {
      engine_.RequestStop();
      planner_.Wake();
      thread_.join();
    }
    // What the worker left: a cancelAll() still waiting gets 0, since
    // nothing is pending once the timer is closed.
    cancel_all_.Serve([this] { return engine_.CancelAll(); });
    unprocessed = engine_.Collect(&library);
    planner_.DestroySleeper();  // unregisters from a ManualClock
  }
  // Their tasks are destroyed here, unrun, and outside the lock: a sleep's
  // task ends the sleep in its destructor, which resumes the sleeping
  // coroutine on this thread, and that coroutine may call the timer again.
  LocalEngine::Discard(library);
  return unprocessed;
}

void Worker::Shutdown() {
  // From now on Timeout::timer() answers nullptr.
  engine_.shared()->owner.store(nullptr, std::memory_order_release);
  if (!OnWorkerThread()) {
    absl::StatusOr<StoppedNodes> unprocessed = Stop();
    if (unprocessed.ok()) LocalEngine::Discard(*unprocessed);
    return;
  }
  // Destroyed from inside one of our own tasks: we cannot join ourselves.
  MutexLock lock(&stop_mu_);
  if (!engine_.shared()->Close()) return;
  finish_on_thread_ = true;
  engine_.RequestStop();
  thread_.detach();
}

int64_t Worker::CancelAll() {
  if (OnWorkerThread()) return engine_.CancelAll();
  if (!started_.load(std::memory_order_acquire)) return 0;  // none pending
  return cancel_all_.Request([this] { return engine_.shared()->closed(); },
                             [this] { planner_.WakeForBacklog(); });
}

}  // namespace tickwheel::internal
