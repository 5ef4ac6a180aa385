// worker/sweeper.h
// -----------------------------------------------------------------------------
// Internal. Sweeper: what cancelAll() and stop() do to every node an engine
// holds, wherever it is: in the wheel, waiting to be filed again, on its way
// in through a shard's lane or queue, on a notice queue, or running (a
// periodic run in progress). Both engines hold nodes in the same parts and
// use it: a Timer's worker (worker.h) and a LocalTimer's (local_engine.h),
// whose lanes and queues stay empty, since its owner files nodes itself.
//
// cancelAll() claims each pending node (TimeoutNode::ClaimCancelAll(), no
// notice: the sweeper unlinks what it cancels itself), destroys its task and
// leaves the nodes in the wheel for PurgeCancelled(), since it may run from
// a task while the wheel is being walked. Library timeouts (an idle
// tracker's on an application's Timer) are passed by.
//
// stop() (Collect()) runs once nothing drives the wheel any more and every
// count word is closed: it claims every node it can reach for stop
// (TimeoutNode::ClaimForStop()), then waits out the calls still in flight
// (a newTimeout() between its reservation and its publication, a cancel()
// between its push and its release) until the pending slots sum to zero and
// every lane is empty, so that no call touches the shared state once it
// returns.
//
// Thread-safety: thread-compatible; the driving thread (or, for Collect(),
// the thread that stops the timer after the driving has ended).

#ifndef TICKWHEEL_WORKER_SWEEPER_H_
#define TICKWHEEL_WORKER_SWEEPER_H_

#include <cstdint>

#include "tickwheel/base/mapped_vector.h"
#include "tickwheel/worker/intake.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/task_runner.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/timer_counters.h"
#include "tickwheel/worker/wheel_driver.h"

namespace tickwheel::internal {

class Sweeper {
 public:
  // What stop() returns: a node and the deadline it was sorted by.
  struct Stopped {
    int64_t deadline;
    TimeoutNode* node;
  };
  // In mapped memory (base/mapped_vector.h), which leaves when it is freed.
  using StoppedNodes = MappedVector<Stopped>;

  // Every part outlives the sweeper.
  Sweeper(SharedTimerState& shared, Intake& intake, WheelDriver& driver,
          TaskRunner& runner, TimerCounters& counters)
      : shared_(shared),
        intake_(intake),
        driver_(driver),
        runner_(runner),
        counters_(counters) {}
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // cancelAll() on the driving thread: cancels every pending node it can
  // reach (lanes, queues, the wheel, the nodes waiting to be filed again, the
  // periodic node whose task is running) but library timeouts, gives their
  // slots back, counts them in cancelled_by_all, and returns how many. The
  // cancelled nodes stay in the wheel until PurgeCancelled(). 0, touching
  // nothing, once the count words are closed: the nodes are stop()'s.
  int64_t CancelAll();
  // CancelAll() left cancelled nodes in the wheel.
  bool purge_pending() const { return purge_; }
  // Removes from the wheel the nodes CancelAll() left there (cancelled, not
  // on a notice queue) and drops them. Not while the wheel is being walked.
  void PurgeCancelled();

  // stop(), once nothing drives the wheel and every count word is closed:
  // every pending node, marked kStopped, earliest deadline first (ties in
  // the order found), each with the engine's reference, which the caller
  // takes. Waits for the calls in flight (see above).
  StoppedNodes Collect();
  // Destroys the task of a node Collect() returned, unrun, and drops its
  // reference.
  static void Discard(TimeoutNode* node);
  // Moves the library timeouts (an idle tracker's, a sleep's) out of
  // `nodes` and returns them: they are not the caller's, and their tasks
  // are to be Discard()ed, once nothing the timer's calls need is held,
  // since a sleep's task resumes its coroutine, which may call the timer.
  static StoppedNodes TakeLibrary(StoppedNodes& nodes);

 private:
  SharedTimerState& shared_;
  Intake& intake_;
  WheelDriver& driver_;
  TaskRunner& runner_;
  TimerCounters& counters_;
  bool purge_ = false;  // CancelAll() left cancelled nodes in the wheel
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_SWEEPER_H_
