// worker/task_runner.h
// -----------------------------------------------------------------------------
// Internal. TaskRunner: runs the tasks of the timeouts a wheel driver has
// claimed (worker/wheel_driver.h) — inline on the calling thread or handed
// to the task executor, one-shot and periodic — and settles each node
// afterwards: gives a one-shot's pending slot back before its task runs,
// counts the run and its lateness, and drops the driver's reference to the
// node. A periodic run sets the node's next run by its missed-run policy
// (base/missed_runs.h, NextRun()) and tells the driver what to do with the
// node (AfterRun).
//
// It owns no thread and reads no clock but the timer's, after an inline
// periodic run (to place the next one). A Timer's worker drives it, and so
// can an event loop on its own thread (LocalTimer, with no executor).
//
// Lifetime of what a task sees: an inline task gets its Timeout lent the
// driver's reference; a task handed to the executor holds that reference in
// its closure, with the owner's keep-alive (SetKeepAlive()), so that
// Timeout::timer() stays answerable however late the executor runs it.
//
// Thread-safety: thread-compatible; one driving thread at a time.

#ifndef TICKWHEEL_WORKER_TASK_RUNNER_H_
#define TICKWHEEL_WORKER_TASK_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "tickwheel/base/logging.h"
#include "tickwheel/base/missed_runs.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/base/periodic_task.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/timer_counters.h"

namespace tickwheel::internal {

class TaskRunner {
 public:
  using Executor = std::function<void(absl::AnyInvocable<void()>)>;

  // `shared` and `counters` outlive the runner; an empty `executor` runs
  // tasks inline. `goes_on`: what the log says happens after an inline task
  // threw (a static string: who drives the runner goes on).
  TaskRunner(SharedTimerState& shared, TimerCounters& counters,
             Executor executor, std::string_view goes_on = "the worker goes on")
      : shared_(shared),
        counters_(counters),
        executor_(std::move(executor)),
        goes_on_(goes_on) {}
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // What an executor closure holds to keep `shared` alive: the owner of
  // the runner. Set before the first task can run.
  void SetKeepAlive(std::weak_ptr<const void> owner) {
    keep_alive_ = std::move(owner);
  }
  bool has_executor() const { return static_cast<bool>(executor_); }

  // A one-shot node claimed (kExpired) by its deadline `deadline` at clock
  // reading `now`: gives its pending slot back (a task that reschedules
  // itself finds it free, even at max_pending_timeouts), counts the run,
  // runs the task or hands it over, and drops the driver's reference, which
  // with `noticed` the notice queue's pop drops instead.
  // Inline: it is the expiry path, once per expired node, and joins the
  // wheel's walk as one stretch of code.
  void RunOneShot(TimeoutNode* node, int64_t deadline, int64_t now,
                  bool noticed);

  // What RunPeriodic() left the driver to do with the node, whose reference
  // the driver still holds (but for kEnded).
  enum class AfterRun {
    kEnded,   // a cancel() made the run its last; the reference is dropped
    kRefile,  // armed at its next run (or a reset()'s deadline): file it
    // Armed at its next run, which is due by `now` already (kBurst catching
    // up): claim it again and run it now, as a burst goes back to back.
    kDueAgain,
  };

  // A periodic node claimed by ClaimToRun() (kClaimed or kSkipped) for its
  // run due at claim.deadline, with the pass's clock reading `now`: runs it
  // (inline, or hands it to the executor) and stores its next run. A
  // kSkipped claim (the previous run is still on the executor) runs
  // nothing: under kSkip it moves on to the next run; under kBurst and
  // kDelay it keeps its deadline and waits (WheelDriver::FlushRefiles()
  // files it by the end of the tick).
  AfterRun RunPeriodic(TimeoutNode* node, const TimeoutNode::Claim& claim,
                       int64_t now);

  // The periodic node whose run is in this runner's hands right now (its
  // task inline, or its hand-over to an executor that may run it at once),
  // or nullptr: a cancelAll() from that task cancels it too.
  TimeoutNode* running_periodic() const { return running_periodic_; }

  // Gives back `slots` pending slots taken by nodes the driver ran or
  // collected (the shared state's worker word).
  void Release(int64_t slots);

  // The driver's reference to a node it found cancelled: dropped now,
  // unless the node is on a notice queue (kNoticed in `word`), whose pop
  // drops it.
  static void DropCancelled(TimeoutNode* node, uint32_t word) {
    if (!(word & TimeoutNode::kNoticed)) node->Unref();
  }

  // The run of a periodic node after its run due at `due`, by `policy`,
  // when the worker was done with that run at clock reading `now`
  // (base/missed_runs.h): due + period when that is after `now`; else, under
  // kSkip the first grid time due + k * period after `now`, under kBurst
  // due + period (or, with more than kMaxBurstRuns grid times up to `now`,
  // the earliest of the kMaxBurstRuns latest), under kDelay now + period.
  // `period` > 0; any clock readings; exact in 128 bits, saturating at
  // INT64_MAX (a run that never comes).
  static int64_t NextRun(MissedRuns policy, int64_t due, int64_t period,
                         int64_t now);
  // Whether a next run `next` is due by clock reading `now`, so that a
  // burst runs it at once. A run at INT64_MAX never comes.
  static bool DueBy(int64_t next, int64_t now) {
    return next <= now && next != INT64_MAX;
  }

 private:
  // Runs the task of `node` with the driver's reference lent, logging what
  // it throws.
  void CallTask(TimeoutNode* node);
  // With an executor: hands the call over with the driver's reference.
  // Apart from the inline path, so that it has no closure on its stack (and
  // so no stack-protector check).
  [[gnu::noinline]] void HandOneShot(TimeoutNode* node, bool noticed);
  [[gnu::noinline]] void HandToExecutor(TimeoutNode* node);
  [[gnu::noinline]] void HandPeriodicRun(TimeoutNode* node, PeriodicRun run);
  // RunPeriodic()'s inline run: calls the task, then returns the node to
  // the wheel's side at its next run (EndInlineRun()).
  AfterRun RunPeriodicInline(TimeoutNode* node, PeriodicRun run,
                             MissedRuns policy, int64_t period, int64_t due,
                             int64_t now);
  // Drops the driver's reference to a node whose task has just run inline,
  // destroying the task's captures now.
  static void ReleaseAfterRun(TimeoutNode* node, bool noticed);
  // Release(), for the expiry path to inline.
  void ReleaseInline(int64_t slots);

  SharedTimerState& shared_;
  TimerCounters& counters_;
  const Executor executor_;
  const std::string_view goes_on_;
  std::weak_ptr<const void> keep_alive_;
  TimeoutNode* running_periodic_ = nullptr;
};

[[gnu::always_inline]] inline void TaskRunner::ReleaseInline(int64_t slots) {
  std::atomic<int64_t>& word = shared_.WorkerReleaseWord();
  if (shared_.limited) {  // shards[0], which producers share
    word.fetch_sub(slots * SharedTimerState::kOne, std::memory_order_release);
    return;
  }
  // worker_word has one writer at a time: the driving thread, then the
  // thread that stops the timer after joining it. No RMW needed.
  word.store(
      word.load(std::memory_order_relaxed) - slots * SharedTimerState::kOne,
      std::memory_order_release);
}

[[gnu::always_inline]] inline void TaskRunner::ReleaseAfterRun(
    TimeoutNode* node, bool noticed) {
  // Captures die with the run, not with the handles: with handles left, the
  // task goes now, and the handles keep the node.
  if (!noticed && node->SoleHolder()) {
    delete node;
    return;
  }
  node->task().Reset();
  if (!noticed) node->Unref();
}

[[gnu::always_inline]] inline void TaskRunner::CallTask(TimeoutNode* node) {
  RunLoggingExceptions("a timer task", goes_on_,
                       [&] { node->task().Run(node, &shared_); });
}

[[gnu::always_inline]] inline void TaskRunner::RunOneShot(TimeoutNode* node,
                                                          int64_t deadline,
                                                          int64_t now,
                                                          bool noticed) {
  ReleaseInline(1);
  counters_.NoteRun(SaturatingSub(now, deadline));
  if (executor_) [[unlikely]] {
    HandOneShot(node, noticed);
    return;
  }
  CallTask(node);
  ReleaseAfterRun(node, noticed);
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_TASK_RUNNER_H_
