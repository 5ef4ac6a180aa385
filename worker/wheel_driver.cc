// Turning the wheel: filing, claiming what is due, and filing moved nodes
// again.

#include "tickwheel/worker/wheel_driver.h"

#include <algorithm>

namespace tickwheel::internal {

WheelDriver::WheelDriver(WheelShape shape, TaskRunner& runner,
                         TimerCounters& counters,
                         const std::atomic<bool>& stopping)
    : shape_(shape),
      within_tick_(shape.slack_nanos < shape.tick_nanos),
      runner_(runner),
      counters_(counters),
      stopping_(stopping),
      wheel_(shape.ticks_per_wheel, shape.tick_nanos) {
  if (within_tick_ || shape.deadline_order) wheel_.SortEachTick();
}

void WheelDriver::NoteExpiringTick(int64_t tick, int64_t now) {
  expiring_tick_ = tick;
  counters_.ticks.store(tick, std::memory_order_relaxed);
  if (SaturatingSub(now, origin_) >=
      SaturatingMul(SaturatingAdd(tick, 2), shape_.tick_nanos)) {
    TimerCounters::Bump(counters_.catch_up_ticks);
  }
}

// Once per expired node: inline into the wheel's sweep and into File(), so
// that the claim and the run are one stretch of code.
[[gnu::always_inline]] inline bool WheelDriver::ExpireBy(TimeoutNode* node,
                                                         int64_t now,
                                                         int64_t tick,
                                                         int64_t limit) {
  // Never early: the claim compares the deadline the node holds at that
  // moment with `limit`, the earlier of the clock reading of the pass and
  // the end of the tick being processed, so that a node a reset() moved
  // past it runs in its own tick's turn (timeout_node.h, "Never early").
  int64_t deadline;
  if (node->ClaimSoleDue(limit, &deadline)) [[likely]] {
    if (tick != expiring_tick_) NoteExpiringTick(tick, now);
    runner_.RunOneShot(node, deadline, now, /*noticed=*/false);
    return !stopping();
  }
  return ExpireShared(node, now, tick, limit);
}

bool WheelDriver::ExpireShared(TimeoutNode* node, int64_t now, int64_t tick,
                               int64_t limit) {
  const TimeoutNode::Claim claim =
      node->ClaimShared(limit, runner_.has_executor());
  switch (claim.outcome) {
    case TimeoutNode::ClaimOutcome::kClaimed:
    case TimeoutNode::ClaimOutcome::kSkipped:
      break;
    case TimeoutNode::ClaimOutcome::kLost:
      // Lost to a cancel() (or cancelAll()) since it was filed.
      TaskRunner::DropCancelled(node, claim.word);
      return true;
    case TimeoutNode::ClaimOutcome::kNotDue:
      // A reset() moved the deadline past the limit: file it again, now.
      // The wheel has taken this bucket off (Wheel::Advance()), so the node
      // goes straight to its tick, which this pass reaches in its turn if
      // it has ended.
      Refile(node);
      return true;
  }
  if (tick != expiring_tick_) NoteExpiringTick(tick, now);
  if (claim.word & TimeoutNode::kPeriodic) {
    RunPeriodic(node, claim, now);
  } else {
    runner_.RunOneShot(node, claim.deadline, now,
                       (claim.word & TimeoutNode::kNoticed) != 0);
  }
  // A stop() or a destroying task ends the pass here.
  return !stopping();
}

void WheelDriver::RunPeriodic(TimeoutNode* node, TimeoutNode::Claim claim,
                              int64_t now) {
  // A burst (MissedRuns::kBurst) runs its missed runs here, back to back.
  // Each is claimed as the wheel claims a node, by the deadline it holds
  // then, so that a cancel() or reset() between two runs ends the burst.
  // The runner stops it at the runs due by `now`, at most kMaxBurstRuns.
  for (;;) {
    switch (runner_.RunPeriodic(node, claim, now)) {
      case TaskRunner::AfterRun::kEnded:
        return;
      case TaskRunner::AfterRun::kRefile:
        refile_.push_back(node);
        return;
      case TaskRunner::AfterRun::kDueAgain:
        break;
    }
    if (stopping()) {  // the stop collects it from the wheel
      refile_.push_back(node);
      return;
    }
    claim = node->ClaimToRun(now, runner_.has_executor());
    switch (claim.outcome) {
      case TimeoutNode::ClaimOutcome::kClaimed:
      case TimeoutNode::ClaimOutcome::kSkipped:
        continue;
      case TimeoutNode::ClaimOutcome::kLost:
        TaskRunner::DropCancelled(node, claim.word);
        return;
      case TimeoutNode::ClaimOutcome::kNotDue:  // a reset() moved it on
        refile_.push_back(node);
        return;
    }
  }
}

bool WheelDriver::File(TimeoutNode* node, int64_t now) {
  // The deadline test comes first: it is false for nearly every node, so
  // the due tick (Insert() computes it again) is rarely computed twice.
  const int64_t deadline = node->deadline.load(std::memory_order_relaxed);
  if (deadline < last_advance_now_) {
    if (const int64_t due = wheel_.DueTickAt(deadline);
        due < wheel_.elapsed()) {
      return Expire(node, now, due);
    }
  }
  wheel_.Insert(node, deadline);
  return true;
}

bool WheelDriver::RunNow(TimeoutNode* node, int64_t now) {
  if (!Wheel::Linked(node)) return true;  // ran, or cancelled and dropped
  // Its own tick, or the tick in progress for an overdue node: the claim's
  // limit is then `now` (that tick has not ended).
  const int64_t tick =
      std::max(wheel_.DueTickAt(node->deadline.load(std::memory_order_relaxed)),
               wheel_.elapsed());
  wheel_.Remove(node);
  const bool go_on = Expire(node, now, tick);
  FlushRefiles();
  return go_on;
}

void WheelDriver::Refile(TimeoutNode* node) {
  // A periodic run that waits for its previous run to leave the task
  // executor (kBurst, kDelay) has a deadline that has passed. Filed by it,
  // it would be looked at again in the next pass, and with a slack below the
  // tick the driver would plan to wake at once, pass after pass, for as
  // long as the executor holds the previous run. It is filed by the end of
  // the tick in progress instead: looked at once a tick. With a slack below
  // the tick, by the first instant after it: the wheel orders a tick's
  // bucket by deadline, and puts first a node due before the tick
  // (Wheel::OrderKey()), so it is looked at as that next tick begins, which
  // is when the end of the tick in progress would have it looked at.
  int64_t filed_by = node->deadline.load(std::memory_order_relaxed);
  if (filed_by <= last_advance_now_ && node->RunInFlight()) {
    filed_by = SaturatingAdd(
        TickEnd(SaturatingSub(last_advance_now_, origin_) / shape_.tick_nanos),
        within_tick_ ? 1 : 0);
  }
  wheel_.Insert(node, filed_by);
}

void WheelDriver::FlushRefiles() {
  for (TimeoutNode* node : refile_) Refile(node);
  refile_.clear();
}

bool WheelDriver::AdvanceTicks(int64_t now) {
  // Tick k may be processed once its end, origin + (k + 1) * tick, has
  // passed.
  const int64_t last_tick = SaturatingSub(now, origin_) / shape_.tick_nanos - 1;
  last_advance_now_ = now;
  // The wheel hands out a bucket's nodes one after another in the same
  // tick (elapsed()), so the claim's limit is worked out once per tick and
  // kept in the callable, which the wheel copies into its loop's frame.
  const bool advanced = wheel_.Advance(
      last_tick, kSliceBudget,
      [this, now, tick = int64_t{-1},
       limit = int64_t{0}](TimeoutNode* node) mutable {
        if (const int64_t t = wheel_.elapsed(); t != tick) [[unlikely]] {
          tick = t;
          limit = ClaimLimit(t, now);
        }
        return ExpireBy(node, now, tick, limit);
      });
  // The periodic nodes that ran: filed once the wheel has moved on, so that
  // their next run, if it is due already, is the next pass's.
  FlushRefiles();
  return advanced;
}

bool WheelDriver::ExpireWithinTick(int64_t now) {
  const int64_t tick = wheel_.elapsed();
  if (wheel_.EarliestFiledAt(tick) > now) return true;  // kNever: nothing
  // A node a reset() moved past now is filed again by Expire()'s claim; the
  // wheel hands out only what the bucket held when the call began.
  const int64_t limit = ClaimLimit(tick, now);
  const bool done = wheel_.ExpireFiledBy(
      now, kSliceBudget,
      [&](TimeoutNode* node) { return ExpireBy(node, now, tick, limit); });
  FlushRefiles();
  return done;
}

bool WheelDriver::Advance(int64_t now, bool intake_done) {
  bool done = AdvanceTicks(now);
  if (within_tick_ && done && intake_done && !stopping()) {
    done = ExpireWithinTick(now);
  }
  counters_.ticks.store(wheel_.elapsed(), std::memory_order_relaxed);
  return done && !stopping();
}

WheelDriver::WakePlan WheelDriver::PlanWake(bool now_tick_too) {
  int64_t next = wheel_.NextWorkTick();
  if (now_tick_too) next = std::min(next, wheel_.elapsed());
  WakePlan plan;
  // A tick end the clock cannot express (past INT64_MAX) never comes: sleep
  // until woken, which is what the deadline INT64_MAX means to a Sleeper.
  if (next == Wheel::kNever) return plan;
  // A node is due before tick `next` iff its deadline is at or before the
  // start of tick `next`: producers compare clock readings, without
  // dividing.
  plan.limit = SaturatingAdd(origin_, SaturatingMul(next, shape_.tick_nanos));
  plan.wake_at = TickEnd(next);
  if (!within_tick_) return plan;
  // Wake for the earliest deadline due then, plus the slack, if that comes
  // before the tick ends: every deadline within the slack of it runs in the
  // same wake-up. A new deadline wakes us if waiting for this plan would
  // make it later than its own slack allows. The limit stays at or above
  // the start of tick `next`, since the slack is below one tick.
  const int64_t first = wheel_.EarliestFiledAt(next);
  if (first != Wheel::kNever) {
    // Not before tick `next` starts: no pass hands out its nodes earlier
    // (a node a reset() moved reads as INT64_MIN, "look now").
    plan.wake_at = std::min(
        plan.wake_at,
        std::max(plan.limit, SaturatingAdd(first, shape_.slack_nanos)));
  } else {
    // Level 0 holds nothing for tick `next`: the work is an upper bucket
    // that starts there and moves down once the tick before it has ended
    // (Wheel::Advance()). Wake then, at the start of tick `next`: waiting
    // for its end would run what that bucket holds for tick `next` up to a
    // tick late, whatever the slack.
    plan.wake_at = plan.limit;
  }
  plan.limit =
      std::max(plan.limit, SaturatingSub(plan.wake_at, shape_.slack_nanos + 1));
  return plan;
}

}  // namespace tickwheel::internal
