// Running claimed tasks: inline, through the executor, periodic runs.

#include "tickwheel/worker/task_runner.h"

#include <algorithm>
#include <utility>

#include "tickwheel/base/logging.h"
#include "tickwheel/base/nanos.h"

namespace tickwheel::internal {

int64_t TaskRunner::NextRun(MissedRuns policy, int64_t due, int64_t period,
                            int64_t now) {
  // 128-bit arithmetic: due and now may lie anywhere in the clock's range,
  // and the period up to INT64_MAX, so no sum or product below overflows.
  const __int128 gap = std::max<__int128>(0, __int128{now} - due);
  const __int128 missed = gap / period;  // grid times in (due, now]
  __int128 next = __int128{due} + period;
  if (missed > 0) {
    switch (policy) {
      case MissedRuns::kSkip:
        next = __int128{due} + (missed + 1) * period;
        break;
      case MissedRuns::kBurst:
        // The kMaxBurstRuns latest missed runs; the older ones are skipped.
        if (missed > kMaxBurstRuns) {
          next = __int128{due} + (missed - kMaxBurstRuns + 1) * period;
        }
        break;
      case MissedRuns::kDelay:
        next = __int128{now} + period;
        break;
    }
  }
  return next > INT64_MAX ? INT64_MAX : static_cast<int64_t>(next);
}

void TaskRunner::Release(int64_t slots) { ReleaseInline(slots); }

void TaskRunner::HandOneShot(TimeoutNode* node, bool noticed) {
  // The closure needs a reference of its own when the notice queue's pop
  // is to drop the driver's.
  if (noticed) node->Ref();
  HandToExecutor(node);
}

void TaskRunner::HandToExecutor(TimeoutNode* node) {
  // The closure takes the driver's reference, and keeps the owner (and so
  // the shared state behind Timeout::timer()) alive: an executor may run it
  // after ~Timer, when timer() then returns nullptr. Captures die with the
  // run, or with the closure when the executor drops it unrun (or throws),
  // not with the handles: a task whose destructor ends something (a sleep
  // of timer/coro.h) must not wait for the last handle, which it may hold.
  struct Claimed {
    explicit Claimed(TimeoutNode* n) : ref(n) {}
    Claimed(Claimed&&) noexcept = default;
    ~Claimed() {
      if (ref.get() != nullptr) ref.get()->task().Reset();
    }
    NodeRef ref;
  };
  RunLoggingExceptions("the task_executor", "that task did not run", [&] {
    executor_([claimed = Claimed(node), keep = keep_alive_.lock(),
               shared = &shared_]() {
      TimeoutNode* const n = claimed.ref.get();
      RunLoggingExceptions("a timer task", "the timer goes on",
                           [&] { n->task().Run(n, shared); });
      n->task().Reset();
    });
  });
}

TaskRunner::AfterRun TaskRunner::RunPeriodic(TimeoutNode* node,
                                             const TimeoutNode::Claim& claim,
                                             int64_t now) {
  // Claimed with kBusy: inline, out of the wheel (kRunning); with an
  // executor, still armed, marked kInFlight until that run is over.
  const int64_t due = claim.deadline;
  PeriodicTask* const box = PeriodicTask::Of(node->task());
  const MissedRuns policy = box->missed_runs();
  if (claim.outcome == TimeoutNode::ClaimOutcome::kSkipped) {
    // The previous run is still on the executor, and runs never overlap.
    // kSkip moves on; kBurst and kDelay keep this run, which waits.
    node->ScheduleNextRun(policy == MissedRuns::kSkip
                              ? NextRun(policy, due, box->period_nanos(), now)
                              : due);
    return AfterRun::kRefile;
  }
  // Read before the run: once it is over, the box may be gone with it.
  const int64_t period = box->period_nanos();
  PeriodicRun run(box);
  counters_.NoteRun(SaturatingSub(now, due));
  if (!executor_) {
    return RunPeriodicInline(node, std::move(run), policy, period, due, now);
  }
  const int64_t next = NextRun(policy, due, period, now);
  node->ScheduleNextRun(next);
  // An executor that runs the closure before returning runs the task on
  // this thread, and a cancelAll() from it must find the node, which is
  // neither in the wheel nor among the driver's refiles meanwhile.
  running_periodic_ = node;
  HandPeriodicRun(node, std::move(run));
  running_periodic_ = nullptr;
  return DueBy(next, now) ? AfterRun::kDueAgain : AfterRun::kRefile;
}

TaskRunner::AfterRun TaskRunner::RunPeriodicInline(TimeoutNode* node,
                                                   PeriodicRun run,
                                                   MissedRuns policy,
                                                   int64_t period, int64_t due,
                                                   int64_t now) {
  node->ReleaseForRun();
  running_periodic_ = node;
  RunLoggingExceptions("a timer task", goes_on_,
                       [&] { run.task().Run(node, &shared_); });
  running_periodic_ = nullptr;
  { PeriodicRun done = std::move(run); }  // the callable may go with it
  // Back to kArmed at the next run, placed by the clock as the run ended (a
  // slow task's own lateness counts), or at the deadline a reset() set
  // during the run (kMoved), unless a cancel() made the run its last.
  const int64_t next = NextRun(policy, due, period, shared_.NowNanos());
  uint32_t word;
  if (!node->EndInlineRun(next, &word)) {
    DropCancelled(node, word);
    return AfterRun::kEnded;
  }
  // A burst goes on only with the runs due by the pass's clock reading, so
  // that a task slower than its period cannot hold the driver here forever;
  // a reset() during the run ends it.
  if (!(word & TimeoutNode::kMoved) && DueBy(next, now)) {
    return AfterRun::kDueAgain;
  }
  return AfterRun::kRefile;
}

void TaskRunner::HandPeriodicRun(TimeoutNode* node, PeriodicRun run) {
  node->Ref();  // the run's own, dropped when the closure goes
  // Whether the executor runs the closure or drops it, the run is over when
  // the closure goes: kInFlight is cleared then.
  struct InFlight {
    explicit InFlight(TimeoutNode* n) : node(n) {}
    InFlight(InFlight&&) noexcept = default;
    NodeRef node;
    ~InFlight() {
      if (node.get() != nullptr) node.get()->EndExecutorRun();
    }
  };
  RunLoggingExceptions("the task_executor", "that run did not happen", [&] {
    executor_([in_flight = InFlight(node), run = std::move(run),
               keep = keep_alive_.lock(), shared = &shared_]() mutable {
      RunLoggingExceptions("a timer task", "the timer goes on", [&] {
        run.task().Run(in_flight.node.get(), shared);
      });
    });
  });
}

}  // namespace tickwheel::internal
