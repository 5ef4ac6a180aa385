// The worker loop: passes and sleeping. newTimeout()'s side is
// worker_schedule.cc; stop() and cancelAll() are worker_stop.cc.

#include "tickwheel/worker/worker.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <string>
#include <utility>

#include "tickwheel/worker/cell_pool.h"

namespace tickwheel::internal {
namespace {

// The worker whose loop runs on this thread, if any: set when Run() starts,
// cleared when it ends. Unlike a stored thread id, which a later thread may
// reuse once the worker's thread has exited, it names the running loop.
thread_local const Worker* running_worker = nullptr;

}  // namespace

Worker::Worker(WorkerConfig config)
    : config_(std::move(config)),
      runner_(shared_, counters_, config_.call_task, config_.task_executor),
      driver_(config_.shape, runner_, counters_, shutdown_),
      intake_(shared_, driver_),
      sweeper_(shared_, intake_, driver_, runner_, counters_) {
  shared_.owner.store(config_.owner, std::memory_order_relaxed);
  shared_.limited = config_.max_pending_timeouts > 0;
  shared_.waker = &planner_;
  shared_.clock = config_.clock.get();
  shared_.monotonic_clock = config_.monotonic_clock;
}

Worker::~Worker() {
  // Reached after Shutdown(): the thread is joined, or detached and finished.
  if (thread_.joinable()) thread_.detach();
}

bool Worker::OnWorkerThread() const { return running_worker == this; }

void Worker::Run() {
  {
    std::string name = config_.thread_name.substr(0, 15);
    pthread_setname_np(pthread_self(), name.c_str());
  }
  // The kernel may end a timed sleep late by the thread's timer slack, 50 us
  // by default, so that it can batch wake-ups. A timer asked for less
  // (slack 0: each deadline on its own) gets the same from the kernel, on
  // the real clock, whose sleeps are the kernel's. 0 would restore the
  // default: 1 ns is the least.
  if (config_.monotonic_clock &&
      config_.shape.slack_nanos < kKernelSlackNanos) {
    prctl(PR_SET_TIMERSLACK,
          static_cast<unsigned long>(
              std::max<int64_t>(1, config_.shape.slack_nanos)),
          0, 0, 0);
  }
  running_worker = this;
  start_nanos_ = config_.clock->NowNanos();
  driver_.Start(start_nanos_);
  start_ready_.store(true, std::memory_order_release);
  start_ready_.notify_all();
  // On the real clock, the node pool may wake us when its retained memory
  // is due to decay (Sleep() plans for that time; see worker/chunk_policy.h).
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
    for (const Stopped& s : sweeper_.Collect()) Sweeper::Discard(s.node);
    planner_.DestroySleeper();
  }
}

void Worker::WakeForPool(void* self) {
  static_cast<Worker*>(self)->planner_.WakeForBacklog();
}

bool Worker::Pass(int64_t now) {
  intake_.StartPass();
  cancel_all_.Serve([this] { return AnswerCancelAll(); });
  if (sweeper_.purge_pending()) sweeper_.PurgeCancelled();
  bool done = intake_.TakeNotices();
  done &= intake_.TakeNew(now);
  driver_.FlushRefiles();
  // An overdue node run by TakeNew() may have stopped the timer.
  if (shutdown_.load(std::memory_order_acquire)) return false;
  done &= driver_.Advance(now, done);
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

void Worker::Sleep() {
  // Housekeeping: while timeouts are being scheduled or cancelled, come back
  // at the end of the current tick to drain the queues, so that cancelled
  // nodes and their captures are released within about a tick. Without
  // traffic, sleep until real work is due, however far away. A notice queue
  // that still reads non-empty holds nodes that Pop() could not reach yet (a
  // push between its exchange and its link store): come back for them too,
  // since no push below the backlog bound wakes us.
  const WheelDriver::WakePlan plan =
      driver_.PlanWake(intake_.traffic() || !intake_.NoticesEmpty());
  // The pool's decay, on the real clock: one wake-up when retained memory
  // is due to go, none once the pool is down to its floor. Read after the
  // plan is published (in Sleep()'s check): a Give() that makes a decay due
  // after this load sees the plan and wakes us (CellDepot::NextDecayNanos()).
  const bool slept = planner_.Sleep(
      plan.limit, [&] { return !intake_.Empty() || cancel_all_.waiting(); },
      [&] {
        int64_t until = plan.wake_at;
        if constexpr (TimeoutNode::kPooled) {
          if (config_.monotonic_clock) {
            until = std::min(until, NodePool::Depot().NextDecayNanos());
          }
        }
        return until;
      });
  if (slept) TimerCounters::Bump(counters_.wakeups);
}

}  // namespace tickwheel::internal
