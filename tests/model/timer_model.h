// tests/model/timer_model.h
// -----------------------------------------------------------------------------
// TimerModel: one deliberately simple, single-threaded reference model of what
// either timer type on a ManualClock observably does: a tickwheel::Timer
// (TimerKind::kThreaded, its worker settled after every change) or a
// tickwheel::LocalTimer (TimerKind::kLocal, driven by advance()). The fuzzers
// (tests/model/fuzz_harness.h) compare the real timers against it.
//
// The model keeps no wheel, no buckets, no rounds and no queues: one record
// per newTimeout() attempt, and the documented rules. Both kinds:
//
//   * deadline = now + max(delay, 0) rounded up to whole nanoseconds, kept as
//     the clock reading the timer stores, saturating at INT64_MAX (which never
//     comes); newTimeoutAt() and resetAt() take a deadline in the past as now.
//     The tick arithmetic uses that reading minus startTime, where INT64_MAX
//     stays INT64_MAX.
//   * Tick k (0-based) ends at startTime + (k+1)*tick; a deadline d (relative)
//     is due at DueTick(d) = (d - 1) / tick for d > 0, else 0, but never in a
//     tick already processed: a deadline filed into one (by scheduling,
//     reset() or a periodic timeout's next run) waits for the end of the
//     first tick not yet processed (first_tick).
//   * cancel() succeeds only on a pending task and destroys its captures
//     before it returns. cancelAll() does that to every pending task and
//     returns how many; from a task, that includes a periodic task's own
//     timeout (its run in progress is its last) and the children scheduled
//     earlier in the same pass.
//   * reset(delay) / resetAt(at) on a pending task: the new deadline, filed
//     as for a task accepted now; false, changing nothing, on any task that
//     is not pending.
//   * newPeriodic(initial, period, missed): the first run as
//     newTimeout(initial); after each run at deadline d, with the clock at
//     `now`, the next deadline is NextPeriodicRun(): d + period if that is
//     after the clock; else runs were missed (a grid time equal to the clock
//     is not "after" it), and by the policy `missed` (the timer's MissedRuns):
//       kSkip   the first d + k * period after the clock;
//       kBurst  d + period, or with m > kModelMaxBurst grid times in
//               (d, now], d + (m - kModelMaxBurst + 1) * period;
//       kDelay  now + period.
//     A periodic task here cancels itself through its own handle in its n-th
//     run (TaskAction::periodic_runs), so that inputs stay finite.
//   * Tasks reset() and periodic tasks take a place within a tick (or an
//     advance()) that the wheel decides; for them the model takes the order
//     from the real timer's events (`observed`), provided every other task
//     kept its order among the rest; else it keeps its own order and the
//     comparison reports the difference.
//   * stop() returns every pending task, earliest deadline first, each then
//     "cancelled" with its task inside until takeTask().
//   * newTimeout() checks, in this order: empty task (InvalidArgument),
//     stopped (FailedPrecondition), pending count at max_pending_timeouts
//     (ResourceExhausted).
//
// kThreaded (a Timer):
//   * startTime is the clock reading at the first accepted newTimeout().
//   * Advancing the clock processes the ticks that have ended in one pass: in
//     each, every pending task due at that tick runs, in the order it was
//     accepted. A child is due at the pass's end at the earliest.
//   * A task scheduled from the test thread into a tick that has already
//     ended (its deadline exactly the current tick boundary) either runs at
//     once or at the next boundary, depending on whether the sleeping worker
//     has looked at the clock since: the harness settles, observes, and tells
//     the model (ResolveOverdue()). A reset() to an overdue deadline is due
//     at the next boundary; one to a later deadline leaves the task filed in
//     its old tick until the worker processes that tick (moved_later).
//   * A periodic run files the next run after the pass; under kBurst a next
//     run that has come already runs at once, in the same tick.
//   * stop() from a task fails (FailedPrecondition); Event::tick is
//     metrics().ticks inside the task.
//
// kLocal (a LocalTimer):
//   * startTime is the clock reading at Create(). With the default slack a
//     timeout runs at the end of its due tick; with a slack below the tick
//     (zero_slack), at its deadline.
//   * advance() runs every pending timeout whose run time has come, in
//     deadline order, ties in acceptance order, and returns how many ran. A
//     timeout a task schedules, and a periodic timeout's next run, are filed
//     after the walk (`deferred`): they run in a later advance(). One reset()
//     to a later deadline stays filed by its old one until the walk reaches
//     it (docs/DESIGN.md, "LocalTimer").
//   * stop() from a task closes the timer (scheduling fails, the advance()
//     ends after that task, later ones run nothing) and returns nothing;
//     what is pending is collected as that advance() returns and the next
//     stop() returns it.
//   * Event::tick is the number of the advance() the task ran in (1 for the
//     first), so that the comparison checks which advance() ran each timeout.
//
// The model also checks its own history against the contract (nothing runs
// before its deadline, nothing runs twice, every accepted task ends as exactly
// one of ran / cancelled / stopped): see CheckContract().
//
// This class is thread-compatible, and copyable: a race is checked by
// playing each order the two calls could take on a copy.

#ifndef TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_
#define TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_

#include <cstdint>
#include <optional>
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

enum class TimerKind : int { kThreaded, kLocal };

struct ModelConfig {
  TimerKind kind = TimerKind::kThreaded;
  int64_t tick_nanos = 1;
  bool zero_slack = false;  // kLocal: slack 0 (below the tick)
  int64_t max_pending = 0;  // <= 0: unlimited
  int64_t clock_start = 0;  // the ManualClock's initial reading
};

class TimerModel {
 public:
  enum class State {
    kRejected,      // newTimeout() failed
    kPending,       // accepted; neither run, cancelled nor stopped
    kRan,           // the timer ran it
    kCancelled,     // cancel() won
    kStopped,       // returned by stop(); task inside
    kStoppedTaken,  // returned by stop(); takeTask() moved the task out
  };

  explicit TimerModel(ModelConfig config);

  // newTimeout(), newTimeoutAt() (`at` a clock reading) and newPeriodic()
  // (a period <= 0 is refused: InvalidArgument) from the test (owner)
  // thread. Returns the attempt's id (ids count every attempt, accepted or
  // not, from 0) and sets `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, Missed missed, Code* code);
  // kThreaded: true when task `id`, just scheduled or reset, was overdue:
  // its tick had already ended. Then the caller settles the real timer and
  // reports with ResolveOverdue() whether it ran at once; `observed_tick`:
  // metrics().ticks inside the real run (see the .cc).
  bool Overdue(int64_t id) const;
  void ResolveOverdue(int64_t id, bool ran_at_once, int64_t observed_tick);
  bool Cancel(int64_t id);
  // cancelAll(): how many it cancelled.
  int64_t CancelAll();
  // cancelAll() that lost a race to stop() for the tasks in `stopped`: it
  // cancels every other pending task (stop() then returns `stopped`).
  int64_t CancelAllExcept(const std::vector<int64_t>& stopped);
  bool Reset(int64_t id, absl::Duration delay);
  bool ResetAt(int64_t id, int64_t at);
  // The clock deadline reset(delay) would set now.
  int64_t ResetDeadline(absl::Duration delay) const;
  // Moves the clock (never back).
  void AdvanceClock(int64_t nanos);
  // One pass at the current clock reading: kThreaded, the worker processes
  // every tick that has ended; kLocal, advance(). Returns how many runs.
  // `observed`, when given, is the real timer's event list after the same
  // pass, from which the order of reset and periodic tasks is taken (see the
  // header comment). kLocal only: `cancel_in_run`, a cancel() from another
  // thread that lands in that (periodic) timeout's run in this pass, as it
  // starts (`at_run_start`: before what the task does) or right after it.
  int64_t Advance(const std::vector<Event>* observed = nullptr,
                  int64_t cancel_in_run = -1, bool at_run_start = false);
  // AdvanceClock(d), then Advance(observed): ManualClock::AdvanceAndSettle.
  int64_t Advance(absl::Duration d,
                  const std::vector<Event>* observed = nullptr);
  // kThreaded: AdvanceClock(d), then the pass as a cancel() that took
  // `taken_back` out of its lane cell while the worker was reading that lane
  // leaves it: the worker stops at the cell (worker/intake.h), so every task
  // the test thread scheduled after it (a suffix of that lane) is taken in
  // only by the worker's next pass, at the same clock reading, in acceptance
  // order. There each one whose tick the first pass ended runs at once, in
  // its own ended tick (WheelDriver::File()), with Event::tick its due tick
  // or the ticks the first pass processed (the worker notes a tick at its
  // first run in it only); the others are filed. Returns how many ran.
  int64_t AdvanceHoldingBack(absl::Duration d, int64_t taken_back,
                             const std::vector<Event>* observed);
  // Whether the last Advance()'s `cancel_in_run` cancelled its timeout.
  bool cancelled_in_run() const { return cancelled_in_run_; }
  // stop() from the test thread: the ids, earliest deadline first (ties by
  // id; the real timer's order among equal deadlines is not specified).
  std::vector<int64_t> Stop();
  // Timeout::takeTask(): true when a task came out.
  bool TakeTask(int64_t id);
  // The destructor: stop(), and the tasks of what it returned are destroyed.
  void Destroy();

  // kLocal: the earliest run time of a pending timeout (a clock reading), or
  // nullopt when none will ever come (nothing pending, only saturated
  // deadlines, or closed).
  std::optional<int64_t> EarliestRunTime() const;

  TimerKind kind() const { return config_.kind; }
  int64_t Pending() const { return pending_; }
  int64_t now() const { return now_; }
  int64_t next_id() const { return static_cast<int64_t>(nodes_.size()); }
  bool stopped() const { return closed_; }
  bool destroyed() const { return destroyed_; }
  int64_t ticks_processed() const { return ticks_; }
  int64_t total_runs() const { return total_runs_; }
  int64_t throws() const { return throws_; }
  const std::vector<Event>& events() const { return events_; }

  State state(int64_t id) const { return nodes_[id].state; }
  bool IsExpired(int64_t id) const { return state(id) == State::kRan; }
  bool IsCancelled(int64_t id) const;
  bool IsPeriodic(int64_t id) const { return nodes_[id].periodic; }
  int64_t Runs(int64_t id) const { return nodes_[id].runs; }
  // True while the task's captures must still exist.
  bool CapturesAlive(int64_t id) const { return nodes_[id].captures_alive; }
  // Nanoseconds after startTime (INT64_MAX: never).
  int64_t Deadline(int64_t id) const { return nodes_[id].deadline; }
  // The deadline as a clock reading, saturated as the timer stores it
  // (Timeout::deadline()): deadlines past the end of the clock's range all
  // read as its end, so they tie (stop() may return them in any order).
  int64_t ClockDeadline(int64_t id) const { return nodes_[id].clock_deadline; }
  // False where the contract leaves deadline() open: a periodic timeout
  // cancelled (kThreaded) or ended in its own run (kLocal) keeps that run's
  // deadline or the next one's.
  bool DeadlineKnown(int64_t id) const;
  // Another thread's cancel() ended periodic timeout `id` at a moment the
  // real run does not show (before, in or after a run): deadline() open.
  void OpenDeadline(int64_t id) { nodes_[id].ended_in_run = true; }

  // "" when the model's own history obeys the contract; else what broke.
  std::string CheckContract() const;
  // A one-line summary and a line per task, for failure messages.
  std::string Describe() const;
  static const char* StateName(State s);

 private:
  struct Node {
    State state = State::kRejected;
    int64_t clock_deadline = 0;  // as the timer stores it (a clock reading)
    int64_t deadline = 0;        // nanoseconds after startTime
    int64_t first_tick = 0;      // ticks processed when it was last filed
    TaskAction action;
    bool captures_alive = false;
    int64_t ran_tick = -1;
    bool ran_overdue = false;  // kThreaded: run at once, in its own ended tick
    bool periodic = false;
    int64_t period = 0;
    Missed missed = Missed::kSkip;
    int64_t runs = 0;
    // Reset or periodic: its place within a pass is the wheel's.
    bool order_free = false;
    // kThreaded: reset() moved it later; the worker still has it filed at
    // `filed_tick` and hears of the new deadline only when it processes it.
    bool moved_later = false;
    int64_t filed_tick = 0;
    bool deferred = false;       // filed by the running pass, after its walk
    bool ended_in_run = false;   // a periodic one, cancelled by its own run
    int64_t parent_advance = 0;  // kLocal: the advance() whose task filed it
    bool by_task = false;        // scheduled by a task, not the test thread
    bool held = false;  // AdvanceHoldingBack(): left in its lane by the pass
  };
  struct Run {
    int64_t deadline;  // the run's deadline, a clock reading
    int64_t advance;   // which pass
    bool order_free;   // a reset or periodic timeout's (see above)
  };

  bool local() const { return config_.kind == TimerKind::kLocal; }
  // Accepts a task due at the clock reading `clock_deadline`.
  int64_t Accept(bool empty_task, int64_t clock_deadline, TaskAction action,
                 Code* code);
  void SetDeadline(int64_t id, int64_t clock_deadline);
  int64_t RawDueTick(const Node& n) const;
  int64_t DueTick(const Node& n) const;
  // The tick a task filed now waits for at the earliest.
  int64_t FilingTick() const { return in_pass_ ? pass_end_ : ticks_; }
  // One run of `id` (`reported_tick` is Event::tick); true when it is to
  // run again at once (a kThreaded kBurst) or, kLocal, when the task closed
  // the timer.
  bool RunOnce(int64_t id, int64_t reported_tick, int64_t cancel_in_run,
               bool at_run_start);

  // kThreaded (timer_model_passes.cc).
  int64_t ThreadedPass(const std::vector<Event>* observed);
  std::vector<int64_t> OrderWithinTick(
      const std::vector<int64_t>& due, int64_t tick,
      const std::vector<Event>* observed) const;
  void RunNode(int64_t id, int64_t tick, int64_t reported_tick);
  std::string CheckThreadedContract() const;
  // kLocal (timer_model_passes.cc).
  int64_t LocalPass(const std::vector<Event>* observed, int64_t cancel_in_run,
                    bool at_run_start);
  std::optional<int64_t> RunTime(const Node& n) const;
  bool Due(const Node& n) const;
  std::vector<int64_t> RunOrder(const std::vector<Event>* observed) const;
  std::string CheckLocalContract() const;

  ModelConfig config_;
  std::vector<Node> nodes_;
  std::vector<Run> runs_;  // one per kRan event, in order
  int64_t now_;
  bool started_ = false;
  int64_t start_ = 0;  // startTime (clock reading)
  int64_t ticks_ = 0;  // ticks processed
  int64_t pending_ = 0;
  int64_t advances_ = 0;  // passes (kLocal: advance() calls)
  int64_t total_runs_ = 0;
  int64_t throws_ = 0;
  bool in_pass_ = false;
  int64_t pass_end_ = 0;  // the first tick the running pass leaves alone
  bool cancelled_in_run_ = false;
  bool closed_ = false;     // stop() was called (kLocal: from a task too)
  bool collected_ = false;  // what was pending is stopped (kStopped)
  // kLocal: collected by an advance() in which a task called stop(), for
  // the next Stop().
  std::vector<int64_t> collected_by_advance_;
  bool destroyed_ = false;
  std::vector<Event> events_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_
