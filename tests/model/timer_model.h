// tests/model/timer_model.h
// -----------------------------------------------------------------------------
// TimerModel: a deliberately simple, single-threaded reference model of what a
// tickwheel::Timer driven by a ManualClock observably does, for the fuzzer
// (tests/timer_fuzzer.cc) to compare the real timer against.
//
// The model keeps no wheel, no buckets, no rounds and no queues. It keeps one
// record per newTimeout() attempt and applies the documented rules directly:
//
//   * startTime is the clock reading at the first accepted newTimeout().
//   * deadline = (now - startTime) + max(delay, 0), saturating at INT64_MAX ns.
//   * Tick k (0-based) ends at startTime + (k+1)*tick. A task with deadline d
//     is due at the first tick whose end is at or after d: DueTick(d) =
//     (d - 1) / tick for d > 0, else 0. With the clock at `now`, the ticks
//     whose end has passed are 0 .. L-1, L = (now - startTime) / tick.
//   * Advancing the clock to `now` processes ticks L_old .. L-1 in one pass: in
//     each, every pending task due at that tick runs, in the order it was
//     accepted. What a task does (schedule a child, cancel another task) takes
//     effect at once; a child is due at max(DueTick, L): nothing is scheduled
//     into a tick the pass has processed.
//   * A task scheduled from the test thread is due at DueTick(d), except when
//     that tick has already ended (d is exactly the current tick boundary):
//     such an overdue task either runs at once (tick DueTick(d)) or at the next
//     boundary (tick L). Both honour the contract ("at the first tick boundary
//     at or after its deadline, never before, normally less than one tick
//     late"); which one happens depends on whether the sleeping worker has
//     already looked at the clock since it passed that boundary, so the
//     harness settles, observes, and tells the model (ResolveOverdue()).
//   * cancel() succeeds only on a pending task and destroys its captures
//     before it returns. cancelAll() does that to every pending task and
//     returns how many; from a task, that includes a periodic task's own
//     timeout (its run in progress is its last) and the children scheduled
//     earlier in the same pass.
//   * newTimeoutAt(at) is newTimeout() with the deadline `at`, a clock
//     reading. Every deadline is kept as the clock reading the timer stores
//     (a relative delay saturates at INT64_MAX in clock terms), and the tick
//     arithmetic above uses that reading minus startTime, where INT64_MAX
//     stays INT64_MAX (never due).
//   * reset(delay) / resetAt(at) on a pending task: the new deadline, and
//     first_tick = the current tick, as for a task accepted now from the test
//     thread; an overdue new deadline is due at the next boundary (the worker
//     files it, it does not run it at once). False, changing nothing, on any
//     task that is not pending.
//   * newPeriodic(initial, period, missed): the first run as
//     newTimeout(initial); after each run at deadline d, with the clock at
//     `now`, the next deadline is d + period if that is after the clock; else
//     runs were missed (a grid time equal to the clock is not "after" it),
//     and by the policy `missed` (the timer's MissedRuns):
//       kSkip   the first d + k * period after the clock;
//       kBurst  d + period, or with m > kModelMaxBurst grid times in
//               (d, now], d + (m - kModelMaxBurst + 1) * period: due
//               already, so it runs again at once, in the same tick, before
//               anything else (reported with the same tick), until the next
//               deadline is after the clock;
//       kDelay  now + period.
//     A deadline of INT64_MAX (a saturated one) never comes. It stays pending
//     (and counted once) until cancel(), cancelAll() or stop(), never reports
//     isExpired(), and is filed again after the pass, like a child. A
//     periodic task here cancels itself through its own handle in its n-th
//     run (TaskAction::periodic_runs), so that inputs stay finite; that, a
//     cancelAll() from it, or a stop() ends a burst.
//   * Order within a tick: tasks due in the same tick run in acceptance
//     order, except tasks that were ever reset() and periodic tasks, whose
//     place in their bucket depends on when the worker filed them again
//     (the worker appends a node it re-files, and whether that happens before
//     or after the nodes handed to it meanwhile depends on when it wakes).
//     For them the model takes the order from the real timer's events
//     (Advance()'s `observed`), provided the same set of tasks ran in that
//     tick and every other task kept acceptance order among the rest; else it
//     falls back to acceptance order and the comparison reports the
//     difference.
//   * stop() returns every pending task, earliest deadline first, each then
//     "cancelled" with its task inside until takeTask().
//   * newTimeout() checks, in this order: empty task (InvalidArgument), stopped
//     (FailedPrecondition), pending count at max_pending_timeouts
//     (ResourceExhausted).
//
// The model also checks its own output against the contract (nothing runs
// before its deadline, nothing runs twice, every accepted task ends as exactly
// one of ran / cancelled / stopped): see CheckContract().
//
// This class is thread-compatible.

#ifndef TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_
#define TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tickwheel::model {

// The status codes newTimeout() and stop() can return, as small integers that
// both sides of the comparison produce.
enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,
  kFailedPrecondition = 2,
  kResourceExhausted = 3,
  kOther = 4,  // anything else is a bug
};
Code CodeOf(const absl::Status& status);
const char* CodeName(Code code);

// A periodic timeout's policy for missed runs: the timer's MissedRuns
// (base/missed_runs.h), restated here so that the model does not take it
// from the code it checks.
enum class Missed : int { kSkip = 0, kBurst = 1, kDelay = 2 };
const char* MissedName(Missed missed);
// Under kBurst, the most missed runs a late run is followed by (the timer's
// kMaxBurstRuns).
inline constexpr int64_t kModelMaxBurst = 1024;

// The next run of a periodic timeout whose run was due at the clock reading
// `due`, with the clock at `now`, by `policy` (the rules of TimerModel's
// newPeriodic() below); INT64_MAX when it never comes.
int64_t NextPeriodicRun(Missed policy, int64_t due, int64_t period,
                        int64_t now);
// A delay as every entry point takes it: rounded up to whole nanoseconds,
// negative as zero, saturated.
int64_t ModelDelayNanos(absl::Duration d);

// What a task does when it runs. Fixed when the task is scheduled, so that the
// model knows it as well as the real task does.
struct TaskAction {
  // > 0: schedule a child task with `child_delay` whose action is Child().
  int repeat = 0;
  absl::Duration child_delay = absl::ZeroDuration();
  // Cancel the timeout whose id is one less than this task's id.
  bool cancel_previous = false;
  // Call cancelAll() on its own timer (after cancel_previous).
  bool cancel_all = false;
  // Call stop() on its own timer (must fail with FailedPrecondition).
  bool try_stop = false;
  // Throw an exception once done (the worker must log it and go on).
  bool throw_after = false;
  // Periodic tasks only: cancel its own timeout in its n-th run (0: never;
  // then only cancel(), cancelAll() or stop() end it).
  int periodic_runs = 0;

  // The same action, with one repeat fewer.
  TaskAction Child() const {
    TaskAction child = *this;
    child.repeat = repeat - 1;
    return child;
  }
  std::string ToString() const;
};

// One thing a running task did, in the order the worker did it.
struct Event {
  enum class Kind : int {
    kRan,
    kChildScheduled,
    kCancelledOther,
    kStopFromTask,
    kCancelAllFromTask,  // result: cancelAll()'s count
    kCancelledSelf,      // a periodic task's cancel() on its own handle
  };
  Kind kind = Kind::kRan;
  int64_t id = 0;      // the running task
  int64_t tick = 0;    // metrics().ticks while it ran: the tick being processed
  int64_t clock = 0;   // the ManualClock reading while it ran
  int64_t other = -1;  // the child's or the cancelled task's id
  int result = 0;      // Code for kChildScheduled / kStopFromTask, bool for
                       // cancel, the count for kCancelAllFromTask

  friend bool operator==(const Event&, const Event&) = default;
  std::string ToString() const;
};

struct ModelConfig {
  int64_t tick_nanos = 1;
  int64_t max_pending = 0;  // <= 0: unlimited
  int64_t clock_start = 0;  // the ManualClock's initial reading
};

class TimerModel {
 public:
  enum class State {
    kRejected,      // newTimeout() failed
    kPending,       // accepted; neither run, cancelled nor stopped
    kRan,           // the worker ran it
    kCancelled,     // cancel() won
    kStopped,       // returned by stop(); task inside
    kStoppedTaken,  // returned by stop(); takeTask() moved the task out
  };

  explicit TimerModel(ModelConfig config);

  // newTimeout() from the test thread. Returns the attempt's id (ids count
  // every attempt, accepted or not, from 0) and sets `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  // newTimeoutAt(): `at` is a clock reading.
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  // newPeriodic(). A period <= 0 is refused (InvalidArgument).
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, Missed missed, Code* code);
  // True when task `id`, just scheduled or reset, was overdue: its tick had
  // already ended. Then the caller settles the real timer and reports with
  // ResolveOverdue() whether it ran at once.
  bool Overdue(int64_t id) const;
  // `observed_tick`: metrics().ticks inside the real run (see the .cc).
  void ResolveOverdue(int64_t id, bool ran_at_once, int64_t observed_tick);
  // Timeout::cancel() from the test thread.
  bool Cancel(int64_t id);
  // Timer::cancelAll() from the test thread: how many it cancelled.
  int64_t CancelAll();
  // cancelAll() that lost a race to stop() for the tasks in `stopped`: it
  // cancels every other pending task (stop() then returns `stopped`).
  int64_t CancelAllExcept(const std::vector<int64_t>& stopped);
  // Timeout::reset(delay) / resetAt(at) from the test thread.
  bool Reset(int64_t id, absl::Duration delay);
  bool ResetAt(int64_t id, int64_t at);
  // The clock deadline reset(delay) would set now.
  int64_t ResetDeadline(absl::Duration delay) const;
  // ManualClock::AdvanceAndSettle(d): runs every tick that ends by the new
  // time. `observed`, when given, is the real timer's event list after the
  // same advance, from which the order within a tick of reset and periodic
  // tasks is taken (see the header comment).
  void Advance(absl::Duration d, const std::vector<Event>* observed = nullptr);
  // Timer::stop() from the test thread: the ids, earliest deadline first (ties
  // by id; the real timer's order among equal deadlines is not specified).
  std::vector<int64_t> Stop();
  // Timeout::takeTask(): true when a task came out.
  bool TakeTask(int64_t id);
  // ~Timer: stop(), and the tasks of what it returned are destroyed.
  void Destroy();

  int64_t Pending() const { return pending_; }
  int64_t now() const { return now_; }
  int64_t next_id() const { return static_cast<int64_t>(nodes_.size()); }
  bool stopped() const { return stopped_; }
  bool destroyed() const { return destroyed_; }
  int64_t ticks_processed() const { return ticks_; }
  int64_t throws() const { return throws_; }
  const std::vector<Event>& events() const { return events_; }

  State state(int64_t id) const { return nodes_[id].state; }
  bool IsExpired(int64_t id) const { return state(id) == State::kRan; }
  bool IsCancelled(int64_t id) const;
  bool IsPeriodic(int64_t id) const { return nodes_[id].periodic; }
  int64_t Runs(int64_t id) const { return nodes_[id].runs; }
  // True while the task's captures must still exist.
  bool CapturesAlive(int64_t id) const;
  int64_t Deadline(int64_t id) const { return nodes_[id].deadline; }
  // The deadline as a clock reading, saturated as the timer stores it
  // (Timeout::deadline()): deadlines past the end of the clock's range all
  // read as its end, so they tie (stop() may return them in any order).
  int64_t ClockDeadline(int64_t id) const;

  // "" when the model's own history obeys the contract; else what broke.
  std::string CheckContract() const;
  // A one-line summary, for failure messages.
  std::string Describe() const;
  static const char* StateName(State s);

 private:
  struct Node {
    State state = State::kRejected;
    int64_t clock_deadline = 0;  // as the timer stores it (a clock reading)
    int64_t deadline = 0;        // nanoseconds after startTime
    int64_t first_tick = 0;  // the tick being processed when it was accepted
    TaskAction action;
    bool captures_alive = false;
    int64_t ran_tick = -1;
    bool ran_overdue = false;  // run at once, in its own ended tick
    bool periodic = false;
    int64_t period = 0;
    Missed missed = Missed::kSkip;
    int64_t runs = 0;
    // Reset or periodic: its place within a tick is not acceptance order.
    bool order_free = false;
    // reset() moved it later: the worker still has it filed at `filed_tick`
    // and hears of the new deadline only when it processes that tick.
    bool moved_later = false;
    int64_t filed_tick = 0;
  };

  // Accepts a task due `nanos` after now (kDelay; negative counts as zero)
  // or at the clock reading `nanos` (kAt).
  enum class When { kDelay, kAt };
  int64_t Accept(bool empty_task, When when, int64_t nanos, TaskAction action,
                 int64_t first_tick, Code* code);
  int64_t Accept(bool empty_task, absl::Duration delay, TaskAction action,
                 int64_t first_tick, Code* code);
  // Sets node `id`'s deadline (a clock reading).
  void SetDeadline(int64_t id, int64_t clock_deadline);
  // The order in which the tasks `due` (ascending ids) run in tick `tick`.
  std::vector<int64_t> OrderWithinTick(
      const std::vector<int64_t>& due, int64_t tick,
      const std::vector<Event>* observed) const;
  // Runs pending task `id` in tick `tick` of a pass that ends before tick
  // `pass_end` (children are due at pass_end at the earliest), and a kBurst
  // periodic task's further runs that are due already, at once.
  // `reported_tick` is what metrics().ticks reads inside the task.
  void RunNode(int64_t id, int64_t tick, int64_t pass_end,
               int64_t reported_tick);
  // One run of RunNode(); true when the task is periodic, still pending,
  // and its next run has come already (kBurst).
  bool RunOnce(int64_t id, int64_t pass_end, int64_t reported_tick);
  int64_t RawDueTick(const Node& n) const;
  int64_t DueTick(const Node& n) const;

  const ModelConfig config_;
  std::vector<Node> nodes_;
  int64_t now_;  // ManualClock reading
  bool started_ = false;
  int64_t start_ = 0;  // startTime (clock reading)
  int64_t ticks_ = 0;  // ticks processed
  int64_t pending_ = 0;
  bool stopped_ = false;
  bool destroyed_ = false;
  int64_t throws_ = 0;
  std::vector<Event> events_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_
