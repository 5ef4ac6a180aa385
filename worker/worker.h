// worker/worker.h
// -----------------------------------------------------------------------------
// Internal. The engine behind tickwheel::Timer: the single-threaded engine
// (local_engine.h: driver, runner, intake, sweeper, counters, slots) driven
// by one dedicated thread, plus what producers on other threads need:
//
//   producers:  Schedule() ──► a shard's lane or queue (shared_state.h)
//                          ──► WakePlanner (wake_planner.h) if the thread
//                              sleeps past the new deadline
//   cancelAll() from another thread ──► CancelAllQueue (cancel_all_queue.h)
//   the thread: Run(): serve cancelAll() tickets, LocalEngine::Pass(now),
//               then sleep on LocalEngine::PlanSleep() until the next work
//   stop(), ~Timer: close, join, LocalEngine::Collect()
//
// This class adds no step to the engine's: newTimeout() reserves its slot
// and builds its node with worker/new_node.h, as a LocalTimer's does, and
// publishes it instead of filing it. docs/DESIGN.md tells the story.
//
// Stopping (newTimeout and cancel vs stop). Each pending-count word
// (SharedTimerState, one per shard) holds a count and a closed bit.
// newTimeout() reserves its slot and checks the bit in one RMW before it
// pushes; a winning cancel() pushes on the notice queue (if it must) before
// it gives its slot back (release). stop() sets the bit in every word, joins
// the worker, then drains the wheel and all queues until the counts sum to
// zero (acquire) and every lane is empty: every newTimeout() that got a slot
// has pushed, and been returned; every cancel() has pushed, and been
// released. It waits for kBusy on each node it collects, so a reset() in
// progress finishes first. No accepted timeout is lost, and nothing shared
// is touched after stop() returns.
//
// Lifetime. Timer holds a shared_ptr to the Worker and so does the thread,
// so a Timer destroyed from inside one of its own tasks can detach the
// thread, which finishes the shutdown by itself. "Am I the worker?" (stop()
// from a task must fail rather than wait for itself) is a thread-local
// marker set while Run() runs, not a stored thread id, which a later thread
// may reuse. Timeout handles hold only nodes; worker/timeout_node.h says why
// cancel() and reset() are safe against destruction.
//
// Thread-safety: Schedule(), CancelAll(), Stop(), Shutdown() and engine()'s
// queries from any thread; everything else on the worker thread.

#ifndef TICKWHEEL_WORKER_WORKER_H_
#define TICKWHEEL_WORKER_WORKER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/cancel_all_queue.h"
#include "tickwheel/worker/local_engine.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wake_planner.h"

namespace tickwheel::internal {

struct WorkerConfig : LocalEngineConfig {
  std::string thread_name;
};

class Worker final : public std::enable_shared_from_this<Worker> {
 public:
  // Linux's default timer slack of a thread (prctl(PR_SET_TIMERSLACK)): a
  // worker whose timer allows less sets its own to the timer's slack.
  static constexpr int64_t kKernelSlackNanos = 50'000;

  // Use std::make_shared: the thread keeps the Worker alive.
  explicit Worker(WorkerConfig config);
  ~Worker();

  // Timer::newTimeout, newTimeoutAt, newPeriodic, for a callable that is not
  // empty: `emplace` moves it from `callable` into the new node, once the
  // call cannot fail any more (so a failed call leaves it untouched). If
  // that throws, nothing is scheduled and the exception propagates. Starts
  // the thread on first use. Returns the node with one reference, the
  // handle's.
  absl::StatusOr<TimeoutNode*> Schedule(TaskEmplacer emplace, void* callable,
                                        const DeadlineSpec& when)
      ABSL_LOCKS_EXCLUDED(start_mu_);

  using Stopped = LocalEngine::Stopped;
  using StoppedNodes = LocalEngine::StoppedNodes;

  // Timer::stop: every node neither run nor cancelled (but for library
  // timeouts, whose tasks it destroys), earliest deadline first, each marked
  // kStopped and with the worker's reference, which the caller takes. In
  // mapped memory (base/mapped_vector.h), which leaves when it is freed.
  absl::StatusOr<StoppedNodes> Stop() ABSL_LOCKS_EXCLUDED(stop_mu_, start_mu_);

  // What ~Timer does: stop, destroy the tasks of what stop returned. From the
  // worker thread itself (a task destroying its Timer), the thread is
  // detached and finishes the shutdown once the task returns.
  void Shutdown() ABSL_LOCKS_EXCLUDED(stop_mu_, start_mu_);

  // Timer::cancelAll: cancels every timeout pending at the call and returns
  // how many. On the worker thread (from a task) it does the work itself;
  // from another thread it asks the worker and waits for the answer.
  int64_t CancelAll();

  bool OnWorkerThread() const;
  // pending(), counters(), CancelCalls(), NowNanos(), shared(): any thread.
  LocalEngine& engine() { return engine_; }

 private:
  // The lane or the queue, then the wake-up if the worker sleeps past the
  // deadline.
  void Publish(TimeoutNode* node, int shard);
  absl::Status StartThread() ABSL_LOCKS_EXCLUDED(start_mu_);
  // The thread: passes, and sleeps in between.
  void Run();
  // Sleeps until the next work, a producer's wake-up, or (on the real
  // clock) the node pool's decay.
  void Sleep();
  // The node pool's waker (CellDepot::AddWaker()).
  static void WakeForPool(void* self);

  const std::string thread_name_;
  WakePlanner planner_;  // before engine_, which hands it to producers
  LocalEngine engine_;
  CancelAllQueue cancel_all_;

  // Start-up. start_mu_ serialises StartThread() and makes its check of the
  // closed bit atomic with stop()'s read of started_: either stop() sees the
  // thread started and joins it, or the thread never starts. No field is
  // ABSL_GUARDED_BY(start_mu_), since none is only ever touched under it:
  // started_ is written under it but read without it by newTimeout()
  // (acquire, pairing with the release store); the engine's origin is
  // published through start_ready_ and started_; thread_ is written once
  // under it, before started_, then joined or detached only by the stop()
  // or Shutdown() that set the closed bit.
  Mutex start_mu_;
  std::atomic<bool> started_{false};
  std::atomic<bool> start_ready_{false};  // set by the worker thread
  std::thread thread_;

  // Serialises stop() and Shutdown(): a second stop() returns only once the
  // first has finished. It guards no field: the one call that sets the
  // closed bit owns the shutdown; the others then find the bit set and
  // return. Lock order: stop_mu_, then start_mu_.
  Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(start_mu_);
  bool finish_on_thread_ = false;  // set before the stop request (release)
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WORKER_H_
