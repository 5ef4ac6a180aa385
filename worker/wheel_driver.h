// worker/wheel_driver.h
// -----------------------------------------------------------------------------
// Internal. WheelDriver: turns the wheel (worker/wheel.h) to a clock reading
// and runs what is due. It files the nodes an intake hands it, claims each
// due node by the deadline it holds at that moment (TimeoutNode::
// ClaimToRun(): never early), hands what it claimed to the TaskRunner, and
// files again the nodes a reset() moved past the claim's limit and the
// periodic ones after their run. A periodic timeout whose missed-run policy
// is kBurst runs its missed runs at once, back to back in the same pass:
// each claimed again as it comes up (RunPeriodic()).
//
// Like the wheel it reads no clock, starts no thread and never sleeps: it is
// told the time (Advance(now)) and says when it next has work (PlanWake()).
// A Timer's worker drives it on its thread; an event loop can drive it on
// its own (LocalTimer).
//
// One pass of Advance(now):
//   1. the ticks whose end `now` has passed, earliest first, each node in
//      insertion order (in deadline order with a slack below the tick, or
//      with WheelShape::deadline_order);
//      upper levels cascade as their time comes;
//   2. with a slack below the tick, the nodes of the tick in progress whose
//      deadline `now` has reached.
// Both in slices of kSliceBudget nodes: a burst is worked off in slices,
// and the caller serves its queues in between. The wheel takes a bucket off
// before it hands out its nodes (Wheel, "Expiring a bucket"), so the driver
// files again, at once, a node that a reset() moved past its claim: to a
// tick the same pass has still to process, it runs in that tick's turn. A
// periodic node that ran is filed when the slice ends (refiles()), so that
// a pass runs it once (a burst aside) and its next run, due already or not,
// is a later pass's.
//
// Thread-safety: thread-compatible; one driving thread at a time.

#ifndef TICKWHEEL_WORKER_WHEEL_DRIVER_H_
#define TICKWHEEL_WORKER_WHEEL_DRIVER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "tickwheel/base/nanos.h"
#include "tickwheel/worker/task_runner.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/timer_counters.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {

struct WheelShape {
  int64_t tick_nanos = 0;   // > 0
  int ticks_per_wheel = 0;  // a power of two
  // How late past its deadline a task may run, in [0, tick_nanos];
  // tick_nanos: tasks run at tick ends.
  int64_t slack_nanos = 0;
  // Run each tick's nodes in deadline order whatever the slack (a slack
  // below the tick implies it). A LocalTimer promises deadline order within
  // each advance(); a Timer's worker, with a tick's slack, keeps insertion
  // order, which costs no sort.
  bool deadline_order = false;
};

class WheelDriver {
 public:
  // The most nodes one pass files, expires or cascades before its caller
  // serves its queues again: a cancel() or an urgent newTimeout() waits
  // behind a burst for one slice, and a burst does not wait for the next
  // tick.
  static constexpr int kSliceBudget = 4096;

  // `stopping`: set when a task stopped or destroyed the timer; the driver
  // then ends its pass after that task. Throws std::bad_alloc when the wheel
  // cannot be allocated.
  WheelDriver(WheelShape shape, TaskRunner& runner, TimerCounters& counters,
              const std::atomic<bool>& stopping);
  WheelDriver(const WheelDriver&) = delete;
  WheelDriver& operator=(const WheelDriver&) = delete;

  // startTime, the clock reading tick 0 starts at. Before any node is filed.
  void Start(int64_t origin) {
    origin_ = origin;
    wheel_.SetOrigin(origin);
  }
  int64_t origin() const { return origin_; }

  // Files a node just armed, by its deadline. One that was due already when
  // the last Advance() read the clock (queued before that pass, it missed
  // its tick only because the driver had not reached it yet) runs now,
  // as part of its own ended tick; one scheduled during that pass waits
  // for the current tick's end, so that a task that reschedules itself with
  // no delay runs once a tick, not in a loop. False when that run stopped
  // the timer.
  bool File(TimeoutNode* node, int64_t now);

  // Files a node just armed by its deadline and never runs it here, even
  // when it is due already: it runs in the first Advance() that reaches its
  // tick (a node due before elapsed() joins elapsed()'s bucket). For an
  // owner that schedules on the driving thread between advances
  // (LocalTimer): its newTimeout() must not run a task. During an Advance()
  // the wheel would take it, and run it in that same Advance() if due by
  // then: an owner that promises a later one files it after the walk.
  void FileForLater(TimeoutNode* node) {
    wheel_.Insert(node, node->deadline.load(std::memory_order_relaxed));
  }

  // A filed node whose deadline a reset() moved earlier: filed again by it.
  void FileAgain(TimeoutNode* node) {
    if (Wheel::Linked(node)) wheel_.Remove(node);
    wheel_.Insert(node, node->deadline.load(std::memory_order_relaxed));
  }
  // Takes `node` out of the wheel if it is there.
  void Unlink(TimeoutNode* node) {
    if (Wheel::Linked(node)) wheel_.Remove(node);
  }

  // Runs `node`, if it is in the wheel and its deadline has come by `now`,
  // without waiting for the end of its tick: for a LocalTimer whose loop was
  // told to wake at once for it (a sleep's stop request on the owner thread,
  // timer/coro.h). Claimed as a pass claims (never early: a node whose
  // deadline has moved past `now` is filed again). False when its run
  // stopped the timer. Not while the wheel is being walked.
  bool RunNow(TimeoutNode* node, int64_t now);

  // Runs everything due at clock reading `now`, in slices (see above).
  // True when it is all done; false when a slice ran out or the timer is
  // stopping: call again. `intake_done`: the caller has filed every node it
  // holds; step 2 waits for that, so that a tick's nodes run in deadline
  // order.
  bool Advance(int64_t now, bool intake_done = true);

  // When to wake for the next work, and the latest deadline that a new or
  // moved timeout must have to wake a driver sleeping on that plan (a clock
  // reading). `now_tick_too`: come back at the end of the current tick even
  // if the wheel has nothing there (housekeeping). wake_at is INT64_MAX
  // when nothing is due.
  struct WakePlan {
    int64_t wake_at = INT64_MAX;
    int64_t limit = INT64_MAX;
  };
  WakePlan PlanWake(bool now_tick_too);

  // Nodes waiting to be filed again: periodic ones after a run, and what a
  // caller hands in (a LocalTimer's cancelAll() its deferred nodes).
  // FlushRefiles() files them (Refile()). cancelAll() may take some out.
  std::vector<TimeoutNode*>& refiles() { return refile_; }
  void FlushRefiles();

  Wheel& wheel() { return wheel_; }
  int64_t elapsed() const { return wheel_.elapsed(); }
  // The clock reading at which tick `tick` ends (saturating).
  int64_t TickEnd(int64_t tick) const {
    return SaturatingAdd(origin_, SaturatingMul(tick + 1, shape_.tick_nanos));
  }

 private:
  // Claims `node` as part of tick `tick` (its bucket's, which the wheel has
  // made elapsed(), or an overdue node's own ended tick) and runs it, or
  // files it again if a reset() moved it past the claim. False when a task
  // stopped the timer: the pass ends there.
  bool Expire(TimeoutNode* node, int64_t now, int64_t tick) {
    return ExpireBy(node, now, tick, ClaimLimit(tick, now));
  }
  // Expire() with `limit` = ClaimLimit(tick, now), for a caller that claims
  // many nodes in one tick and computes it once.
  bool ExpireBy(TimeoutNode* node, int64_t now, int64_t tick, int64_t limit);
  // Expire() of every node but the common one (TimeoutNode::ClaimSoleDue()):
  // handles held, periodic, noticed, moved, cancelled. Out of line, so that
  // the walk's loop stays small.
  [[gnu::noinline]] bool ExpireShared(TimeoutNode* node, int64_t now,
                                      int64_t tick, int64_t limit);
  // Files a node again by its deadline; but a periodic run that waits for
  // its previous run to leave the task executor, whose deadline has passed,
  // by the end of the tick in progress.
  void Refile(TimeoutNode* node);
  // Runs a periodic node claimed as `claim` and hands it on (refile_, or
  // its reference dropped), running a burst's further runs at once.
  void RunPeriodic(TimeoutNode* node, TimeoutNode::Claim claim, int64_t now);
  // Per-tick bookkeeping of Expire(): counters' ticks, and catch_up_ticks
  // for a tick whose expiry starts a full tick or more after its end.
  void NoteExpiringTick(int64_t tick, int64_t now);
  // The latest deadline Expire() may claim in tick `tick` at clock reading
  // `now`: the earlier of `now` and the tick's end ("Never early"). A
  // caller that claims many nodes in one tick works it out once (ExpireBy()).
  int64_t ClaimLimit(int64_t tick, int64_t now) const {
    return std::min(now, TickEnd(tick));
  }
  // Step 1 of a pass: the ticks that ended.
  bool AdvanceTicks(int64_t now);
  // Step 2: the tick in progress, up to `now`.
  bool ExpireWithinTick(int64_t now);
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  const WheelShape shape_;
  // The slack is below one tick: step 2, and wake-ups for deadlines rather
  // than tick ends.
  const bool within_tick_;
  TaskRunner& runner_;
  TimerCounters& counters_;
  const std::atomic<bool>& stopping_;
  Wheel wheel_;
  int64_t origin_ = 0;
  std::vector<TimeoutNode*> refile_;
  int64_t expiring_tick_ = -1;  // the tick Expire() last saw (bookkeeping)
  // The clock reading of the latest Advance(); none yet: nothing is
  // overdue. File() runs at once only what was due before it, and Refile()
  // places a waiting periodic run by it.
  int64_t last_advance_now_ = INT64_MIN;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WHEEL_DRIVER_H_
