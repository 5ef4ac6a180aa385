// worker/local_engine.h
// -----------------------------------------------------------------------------
// Internal. The engine behind tickwheel::LocalTimer: the same wheel driver,
// task runner, shared state and sweeper as a Timer's worker (worker.h), with
// no thread of its own. Its owner, an event loop, drives it by calls:
//
//   owner thread:   Schedule() ──► WheelDriver::FileForLater()   (no lanes)
//                   Advance()  ──► Intake::TakeNotices(), then
//                                  WheelDriver::Advance(now) ──► TaskRunner
//                   NextWakeupNanos() ──► WheelDriver::PlanWake()
//                   CancelAll(), Stop() ──► Sweeper
//   owner thread:   Timeout::cancel() ──► CancelOnOwner(): unlinked at
//                   once, from a task inside Advance() too
//   any thread:     Timeout::cancel() ──► a shard's notice queue
//
// What differs from the worker, and why:
//   * Filing. The owner schedules on the driving thread, so a new node is
//     armed and filed into the wheel at once, without a lane or a queue.
//     A task that schedules during Advance() is promised a later
//     Advance(): its node waits in `deferred_` and is filed when the walk
//     is over (filed at once, a node due by then would run in this one).
//   * Order. Each tick's nodes run in deadline order whatever the slack
//     (WheelShape::deadline_order), so one Advance() runs what is due in
//     deadline order.
//   * Expedited sleeps. A stop request for a sleep (timer/coro.h) resets its
//     timeout to now; with a slack of one tick that would still wait for the
//     tick's end. On the owner thread the engine also records the node
//     (Expedite()): the plan is "now" and the next Advance() runs it after
//     the walk, so that a loop's next wait after its own stop request is 0.
//     A stop request from another thread only resets (nobody to tell).
//   * Nobody sleeps here. The owner plans its own wait from
//     NextWakeupNanos(); the BacklogWaker this engine gives the shared state
//     does nothing, since a cancel() from another thread needs no wake-up
//     (its task is destroyed by that cancel(), and its node is unlinked at
//     the owner's next call), and reset() is an owner-thread call.
//   * Cross-thread cancel() is Timer's protocol unchanged
//     (worker/timeout_node.h): a node in the wheel goes on its canceller's
//     shard's notice queue, drained at the start of Advance() and of
//     NextWakeupNanos(); exactly one of cancel() and the owner's claim wins.
//   * A cancel() on the owner thread, from a task inside Advance() too
//     (the wheel lets its walk's callback unlink nodes), settles the node
//     itself (OwnerCanceller): the claim's CAS also drops the engine's
//     reference, the node leaves the wheel at once, no queue. So a bucket
//     holds no cancelled nodes between two Advance() calls, and a loop
//     that schedules and cancels many timeouts per turn (the
//     request-deadline pattern) does not grow buckets by the cancelled
//     ones, only to empty and free them at the next Advance(). cancel()
//     knows it runs on the owner thread without touching the engine: the
//     node carries the tag of the thread that scheduled it
//     (TimeoutNode::OwnerTag()). Only that thread touches the wheel, so the
//     unlink needs no ordering beyond the claim's CAS, which a racing
//     cancel() from another thread loses.
//   * Single-writer counting. Without max_pending_timeouts, the owner is
//     the only thread that writes its pending word (shard 0's:
//     cross-thread cancels count in their shards' cancel words, runs in
//     the worker word), so Schedule() reserves and CancelOnOwner() gives
//     back with a load and a store instead of an RMW, and the owner's
//     cancels are counted in owner_cancels_, which only it writes. With a
//     limit every cancel() gives its slot back in that word, and the owner
//     uses RMWs as every thread does.
//
// Thread-safety: Schedule(), Advance(), NextWakeupNanos(), CancelAll() and
// Stop() on the owner thread only (the first thread that calls one of them;
// debug builds check it). pending(), counters(), CancelCalls(), NowNanos() from
// any thread. The destructor on the owner thread, or on another once the owner
// is done with the engine (happens-before), never from inside a task.

#ifndef TICKWHEEL_WORKER_LOCAL_ENGINE_H_
#define TICKWHEEL_WORKER_LOCAL_ENGINE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
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
  WheelShape shape;  // deadline_order is set by the engine
  int64_t max_pending_timeouts = 0;
  // Calls a task with its handle (the facade's).
  TaskCaller call_task = nullptr;
  std::shared_ptr<Clock> clock;  // non-null
  // `clock` reads CLOCK_MONOTONIC: read inline (MonotonicNanos()).
  bool monotonic_clock = false;
};

class LocalEngine final : private BacklogWaker, private OwnerCanceller {
 public:
  // Reads the clock once: startTime, from which ticks count. Throws
  // std::bad_alloc when the wheel cannot be allocated.
  explicit LocalEngine(LocalEngineConfig config);
  // Shutdown().
  ~LocalEngine();
  LocalEngine(const LocalEngine&) = delete;
  LocalEngine& operator=(const LocalEngine&) = delete;

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
  // NextWakeupNanos() is the clock until then, so that the loop's next
  // pollTimeoutMs() is 0. Holds a reference to it meanwhile. Owner thread
  // only; nothing once closed, or without memory (the reset stands: it
  // runs at its tick's end).
  void Expedite(TimeoutNode* node);

  // cancelAll(): cancels every pending timeout, those a running task
  // scheduled in this Advance() included; returns how many.
  int64_t CancelAll();

  // stop(): closes the timer and returns every pending node, marked
  // kStopped, earliest deadline first, each with the engine's reference,
  // but library timeouts (sleeps), whose tasks it destroys unrun after the
  // others are collected. From a task during Advance() it closes the timer,
  // ends that Advance() after the task, and returns nothing; that Advance()
  // collects before it returns, and the next Stop() returns the nodes. A
  // second Stop() after that returns nothing.
  Sweeper::StoppedNodes Stop();

  // ~LocalTimer: stops if Stop() has not, and destroys the tasks of what is
  // left, unrun. Idempotent; any thread once the owner is done. Aborts with
  // a message when called from a task during Advance().
  void Shutdown();

  int64_t pending() const {
    return std::max<int64_t>(0, shared_.SumCounts(std::memory_order_relaxed));
  }
  // What LocalTimer::metrics() reads: the counters (one writer, the owner)
  // and the successful cancel() calls, from other threads and the owner's.
  const TimerCounters& counters() const { return counters_; }
  int64_t CancelCalls() const {
    return shared_.CancelCount() +
           owner_cancels_.load(std::memory_order_relaxed);
  }
  // The shared state that handles refer to.
  SharedTimerState* shared() { return &shared_; }
  int64_t NowNanos() const { return shared_.NowNanos(); }

 private:
  // Nobody sleeps in this engine (see above).
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

  // Debug builds: binds the owner thread on the first call, and aborts with
  // a message naming `call` when another thread calls.
  void CheckOwner(const char* call);
  // Drains the notice queues, and purges what CancelAll() left in the
  // wheel. Not during Advance()'s walk.
  void TakeNotices();
  // Files the nodes tasks scheduled during Advance().
  void FileDeferred();
  // Inside Advance(), after the walk: runs the expedited nodes still in the
  // wheel (those the walk ran, or that were cancelled, are gone from it).
  void RunExpedited(int64_t now);
  // Drops the expedited nodes no longer in the wheel; whether any is left.
  bool HasExpedited();
  // Drops every expedited node (stop(), the destructor).
  void ClearExpedited();
  // Once: the sweeper's Collect(), with the library timeouts' tasks
  // destroyed (ending their sleeps) and the rest returned. Empty after.
  Sweeper::StoppedNodes Collect();

  const LocalEngineConfig config_;
  SharedTimerState shared_;
  TimerCounters counters_;
  // Set by Stop() from a task: the driver ends its walk after that task.
  std::atomic<bool> stopping_{false};
  TaskRunner runner_;
  WheelDriver driver_;
  Intake intake_;
  Sweeper sweeper_;
  int64_t origin_ = 0;  // startTime: the clock reading tick 0 starts at
  // Nodes scheduled by tasks during Advance(), armed, not yet filed.
  std::vector<TimeoutNode*> deferred_;
  // Nodes Expedite() was given, each with a reference (dropped by
  // HasExpedited(), RunExpedited() and ClearExpedited()), for the next
  // Advance().
  std::vector<TimeoutNode*> expedited_;
  bool in_advance_ = false;  // Advance() is walking the wheel
  bool collected_ = false;   // Collect() has run
  // Collected by an Advance() in which a task called Stop(): for the next
  // Stop().
  Sweeper::StoppedNodes stopped_;
  // Cancels won by CancelOnOwner(), for metrics(): written by the owner
  // alone (load and store), read from any thread.
  std::atomic<int64_t> owner_cancels_{0};
  // Debug builds: the owner thread, bound by its first call.
  std::atomic<std::thread::id> owner_{};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_LOCAL_ENGINE_H_
