// worker/intake.h
// -----------------------------------------------------------------------------
// Internal. Intake: what producers hand the driving thread, taken in. It
// drains the shards' notice queues (cancelled nodes to unlink, nodes a
// reset() moved earlier to file again) and moves new nodes from the shards'
// fast lanes and pending queues into the wheel driver, arming each (or
// dropping it if it was cancelled while queued), round-robin over the
// shards, a share of the slice budget each, so that one busy producer
// cannot starve the others.
//
// Order: a thread's timeouts reach the wheel in the order it scheduled them,
// except that after its lane overflowed into the queue, later timeouts from
// the lane can be filed before the overflowed ones (the lane is popped
// first); timeouts due in the same tick then run in that order.
//
// Thread-safety: the consumer side of the lanes and queues; one thread at a
// time (the worker, then stop() after joining it).

#ifndef TICKWHEEL_WORKER_INTAKE_H_
#define TICKWHEEL_WORKER_INTAKE_H_

#include <cstdint>

#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wheel_driver.h"

namespace tickwheel::internal {

class Intake {
 public:
  Intake(SharedTimerState& shared, WheelDriver& driver)
      : shared_(shared), driver_(driver) {}
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  // Drains the notice queues: an armed node moved earlier is filed again;
  // a cancelled one is unlinked and its reference dropped (cancel() already
  // destroyed its task). True when drained within the slice budget.
  bool TakeNotices();
  // Moves new nodes into the driver (WheelDriver::File(), which runs one
  // that is overdue). True when every lane and queue is drained within the
  // budget; false when the budget ran out or a run stopped the timer.
  bool TakeNew(int64_t now);
  // The next new node of `shard`: its fast lane first, then its queue;
  // nullptr when neither has one ready.
  TimeoutNode* PopNew(SharedTimerState::Shard& shard);
  // PopNew() for cancelAll(), which must reach every node published before
  // it: where PopNew() leaves a claimed but unpublished lane cell for a later
  // pass, this waits until the cell is published, buried or given back. Such
  // a cell is a cancel() between its take-back and settling the cell, or a
  // newTimeout() between claiming and publishing: a few stores away, and
  // nodes published after it wait behind it. nullptr: lane and queue empty.
  // Ordering: each retry's Pop() exchanges the cell (acq_rel), so it takes
  // the node with everything written before Publish() (release), or the
  // tombstone Bury() stored (release); a cell given back instead is seen
  // through tail_ (Lane::Recount(), acquire, after Unclaim()'s seq_cst CAS).
  TimeoutNode* PopNewWaiting(SharedTimerState::Shard& shard);

  // Whether the last Take*() found anything, cleared by StartPass(): while
  // traffic flows the worker comes back at the end of the tick.
  bool traffic() const { return traffic_; }
  void StartPass() { traffic_ = false; }

  // No new node waits in a lane or queue.
  bool Empty() const;
  // No node waits on a notice queue.
  bool NoticesEmpty() const;
  // No lane holds a claimed cell: every published node popped, every
  // taken-back cell settled.
  bool LanesEmpty() const;

 private:
  SharedTimerState& shared_;
  WheelDriver& driver_;
  bool traffic_ = false;
  int next_shard_ = 0;  // where TakeNew() starts next
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_INTAKE_H_
