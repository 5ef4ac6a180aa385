// worker/local_engine.h
// -----------------------------------------------------------------------------
// Internal. LocalEngine: the single-threaded engine, the one place where a
// timer's parts are assembled. One thread at a time drives it; it starts no
// thread and never sleeps:
//
//   SharedTimerState (shared_state.h)  counts, lanes, queues, the handles' side
//   Intake (intake.h)                  notices and new nodes taken in
//   WheelDriver (wheel_driver.h)       files, claims what is due, files again
//     └─ TaskRunner (task_runner.h)    runs tasks: inline, executor, periodic
//   Sweeper (sweeper.h)                cancelAll() and stop() over every node
//   TimerCounters (timer_counters.h)   metrics
//
// It is driven in one of two ways, chosen at construction:
//   * By its owner's calls (tickwheel::LocalTimer, no waker given): the owner
//     thread calls Schedule(), Advance(), NextWakeupNanos(), CancelAll(),
//     Stop(); nodes are filed at once, without a lane or a queue.
//   * By a Worker's thread (worker.h, a waker given): the worker publishes new
//     nodes on the shards' lanes and queues itself, calls Pass() in a loop,
//     sleeps on PlanSleep(), and, once its thread has ended, Collect()s.
// Slot accounting (new_node.h, shared_state.h "Counting"), cancelAll() and
// the collection at stop() are the same code for both.
//
// Owner-driven, what differs (docs/DESIGN.md, "LocalTimer", says why): a
// task's newTimeout() during Advance() waits in `deferred_` for a later
// Advance(); each tick runs in deadline order (WheelShape::deadline_order);
// a sleep's stop request on the owner thread is Expedite()d; nobody sleeps,
// so the BacklogWaker given to the shared state does nothing; a cancel() on
// the owner thread settles the node at once (OwnerCanceller, by the tag
// TimeoutNode::OwnerTag() the node carries), one from another thread takes
// Timer's protocol (a notice queue); and without max_pending_timeouts the
// owner alone writes its pending word (shard 0's), so it reserves and gives
// back with a load and a store, counting its cancels in owner_cancels_.
//
// Thread-safety: owner-driven, Schedule(), Advance(), NextWakeupNanos(),
// Expedite(), CancelAll() and Stop() on the owner thread (the facade,
// tickwheel::LocalTimer, checks it on every call, in every build).
// Worker-driven, Start(), Pass(), PlanSleep(), CancelAll() and Collect() on the
// driving thread (the worker, then the thread that stops it once the worker is
// joined). pending(), counters(), CancelCalls(), NowNanos(), RequestStop() from
// any thread. The destructor once driving is over (happens-before), never from
// a task.

#ifndef TICKWHEEL_WORKER_LOCAL_ENGINE_H_
#define TICKWHEEL_WORKER_LOCAL_ENGINE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tickwheel/base/clock.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/intake.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/sweeper.h"
#include "tickwheel/worker/task_runner.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/timer_counters.h"
#include "tickwheel/worker/wheel_driver.h"

namespace tickwheel::internal {

struct LocalEngineConfig {
  WheelShape shape;  // owner-driven: deadline_order is set by the engine
  int64_t max_pending_timeouts = 0;
  TaskRunner::Executor task_executor;  // worker-driven only
  std::shared_ptr<Clock> clock;        // non-null
  // `clock` reads CLOCK_MONOTONIC (MonotonicNanos()): newTimeout() then
  // reads it inline, without a virtual call, and a worker plans the node
  // pool's decay by it.
  bool monotonic_clock = false;
  // The facade's Timer, opaque here (SharedTimerState::owner); null for a
  // LocalTimer, whose Timeout::timer() answers nullptr.
  void* owner = nullptr;
};

class LocalEngine final : private BacklogWaker, private OwnerCanceller {
 public:
  using Stopped = Sweeper::Stopped;
  using StoppedNodes = Sweeper::StoppedNodes;

  // Without `waker`, owner-driven: reads the clock once for startTime, from
  // which ticks count. With one (a Worker's WakePlanner, which must outlive
  // the engine), worker-driven: producers wake the driving thread through
  // it, and Start() sets startTime. Throws std::bad_alloc when the wheel
  // cannot be allocated.
  explicit LocalEngine(LocalEngineConfig config, BacklogWaker* waker = nullptr);
  // Owner-driven: Shutdown().
  ~LocalEngine();
  LocalEngine(const LocalEngine&) = delete;
  LocalEngine& operator=(const LocalEngine&) = delete;

  // ---- Owner-driven (LocalTimer) ----
  // newTimeout(), newTimeoutAt(), newPeriodic(), for a callable that is not
  // empty (as Worker::Schedule()): reserves a slot, builds the node, arms
  // it and files it, or, during Advance(), defers filing to its end.
  // Returns the node with one reference, the handle's.
  absl::StatusOr<TimeoutNode*> Schedule(TaskEmplacer emplace, void* callable,
                                        const DeadlineSpec& when);
  // Reads the clock, takes the notices in, runs every task due then in
  // deadline order, files what tasks scheduled meanwhile; returns how many
  // runs started. 0 from a task (the running Advance() goes on) and once
  // the timer is closed.
  int64_t Advance();
  // When Advance() next has work (a clock reading): a task due, or far
  // nodes to move down a level of the wheel (worker/wheel.h, "Why a
  // hierarchy"). INT64_MAX: none, or closed. From a task during Advance(),
  // the clock now: the plan is made once Advance() returns.
  int64_t NextWakeupNanos();
  // A sleep's stop request on the owner thread (timer/coro.h), after it
  // reset the sleep's timeout to now: `node` runs in the next Advance(),
  // after what is due, without waiting for its tick's end, and
  // NextWakeupNanos() is the clock until then. Holds a reference to it
  // meanwhile. Nothing once closed, or without memory (the reset stands).
  void Expedite(TimeoutNode* node);
  // stop(): closes the timer and returns every pending node, marked
  // kStopped, earliest deadline first, each with the engine's reference,
  // but library timeouts (sleeps), whose tasks it destroys unrun after the
  // others are collected. From a task during Advance() it closes the timer,
  // ends that Advance() after the task, and returns nothing; that Advance()
  // collects before it returns, and the next Stop() returns the nodes. A
  // second Stop() after that returns nothing.
  StoppedNodes Stop();
  // ~LocalTimer: stops if Stop() has not, and destroys the tasks of what is
  // left, unrun. Idempotent. Aborts with a message when called from a task
  // during Advance().
  void Shutdown();

  // ---- Worker-driven (worker.h) ----
  // startTime, on the driving thread before the first Pass().
  void Start(int64_t origin) { driver_.Start(origin); }
  // One pass at clock reading `now`: notices, new nodes from the lanes and
  // queues (an overdue one runs at once), then the wheel, each in slices
  // (WheelDriver::kSliceBudget). True when all work due is done (the
  // driving thread may sleep); false when a slice ran out or the timer is
  // stopping.
  bool Pass(int64_t now);
  // What to sleep on after a pass that finished: the driver's plan, with a
  // wake-up at the tick's end while producers hand nodes in (housekeeping).
  WheelDriver::WakePlan PlanSleep() {
    return driver_.PlanWake(intake_.traffic() || !intake_.NoticesEmpty());
  }
  // No new node waits in a lane or queue.
  bool InboxEmpty() const { return intake_.Empty(); }
  // The driving thread woke from a sleep (metrics' wakeups).
  void NoteWakeup() { TimerCounters::Bump(counters_.wakeups); }
  // Ends the pass after the task that runs, and every later one.
  void RequestStop() { stopping_.store(true, std::memory_order_release); }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // What an executor closure holds to keep the shared state alive.
  void SetKeepAlive(std::weak_ptr<const void> owner) {
    runner_.SetKeepAlive(std::move(owner));
  }

  // ---- Either ----
  // cancelAll() on the driving thread: cancels every pending timeout, those
  // a task scheduled in this Advance() or pass included, and returns how
  // many; 0 once the timer is closed.
  int64_t CancelAll();
  // Once driving has ended and the count words are closed (the first call;
  // empty after): every pending node (Sweeper::Collect()), with the library
  // timeouts moved to `library`, whose tasks the caller Discard()s once it
  // holds nothing a timer call needs (a sleep's resumes its coroutine).
  StoppedNodes Collect(StoppedNodes* library);
  // Destroys the tasks of `nodes`, unrun, and drops their references.
  static void Discard(const StoppedNodes& nodes);

  int64_t origin() const { return driver_.origin(); }
  int64_t pending() const {
    return std::max<int64_t>(0, shared_.SumCounts(std::memory_order_relaxed));
  }
  // What metrics() reads: the counters (one writer, the driving thread) and
  // the successful cancel() calls, from other threads and the owner's.
  const TimerCounters& counters() const { return counters_; }
  int64_t CancelCalls() const {
    return shared_.CancelCount() +
           owner_cancels_.load(std::memory_order_relaxed);
  }
  const LocalEngineConfig& config() const { return config_; }
  // The shared state that handles refer to.
  SharedTimerState* shared() { return &shared_; }
  int64_t NowNanos() const { return shared_.NowNanos(); }

 private:
  // Nobody sleeps in an owner-driven engine (see above).
  void WakeForBacklog() override {}
  void WakeIfSleepingPast(int64_t) override {}
  // Timeout::cancel() on the owner thread of an armed node it scheduled:
  // kElsewhere when the wheel does not hold `node` as plainly armed (it is
  // running, waiting to be filed again, deferred, or has a notice).
  TimeoutNode::OwnerClaim CancelOnOwner(TimeoutNode* node) override;
  // The owner's slot in its pending word (shard 0's), taken by Schedule()
  // and given back by CancelOnOwner(): a load and a store without a limit,
  // since the owner alone writes that word then (see above), else RMWs.
  absl::Status ReserveOwnSlot();
  void ReleaseOwnSlot();

  // Drains the notice queues, and purges what CancelAll() left in the
  // wheel. Not during Advance()'s walk.
  void TakeNotices();
  // Inside Advance(), after the walk: runs the expedited nodes still in the
  // wheel (those the walk ran, or that were cancelled, are gone from it).
  void RunExpedited(int64_t now);
  // Drops the expedited nodes no longer in the wheel; whether any is left.
  bool HasExpedited();
  // Drops every expedited node (stop(), the destructor).
  void ClearExpedited();
  // Owner-driven Collect(): the library timeouts' tasks destroyed here.
  StoppedNodes CollectOwned();

  const LocalEngineConfig config_;
  const bool owner_driven_;
  SharedTimerState shared_;
  TimerCounters counters_;
  // Set by a stop from a task or another thread: the driver ends its walk
  // after the task in progress.
  std::atomic<bool> stopping_{false};
  TaskRunner runner_;
  WheelDriver driver_;
  Intake intake_;
  Sweeper sweeper_;
  // Nodes scheduled by tasks during Advance(), armed, not yet filed.
  std::vector<TimeoutNode*> deferred_;
  // Nodes Expedite() was given, each with a reference (dropped by
  // HasExpedited(), RunExpedited() and ClearExpedited()).
  std::vector<TimeoutNode*> expedited_;
  // Advance() or Pass() is walking: a cancelAll() leaves its nodes in the
  // wheel, and an owner's newTimeout() is deferred.
  bool in_advance_ = false;
  bool collected_ = false;  // Collect() has run
  // Collected by an Advance() in which a task called Stop(): for the next
  // Stop().
  StoppedNodes stopped_;
  // Cancels won by CancelOnOwner(), for metrics(): written by the owner
  // alone (load and store), read from any thread.
  std::atomic<int64_t> owner_cancels_{0};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_LOCAL_ENGINE_H_
