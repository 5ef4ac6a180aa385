// tests/model/local_timer_model.h
// -----------------------------------------------------------------------------
// LocalTimerModel: a deliberately simple, single-threaded reference model of
// what a tickwheel::LocalTimer (timer/local_timer.h) on a ManualClock
// observably does, for the LocalTimer fuzzer (tests/local_timer_fuzzer.cc).
// It shares TaskAction, Event and Code with TimerModel
// (tests/model/timer_model.h) but none of its worker rules: a LocalTimer has
// no thread, so nothing here depends on when a worker wakes.
//
// One record per newTimeout() attempt, and the documented rules:
//
//   * startTime is the clock reading at Create(). Deadlines are clock
//     readings: now + max(delay, 0) rounded up to whole nanoseconds,
//     saturating at INT64_MAX (which never comes); newTimeoutAt() and
//     resetAt() take a deadline in the past as now.
//   * Run time. With the default slack (one tick) a timeout runs at the end
//     of the tick its deadline falls in: tick k covers the deadlines in
//     (start + k*tick, start + (k+1)*tick], and a deadline at or before
//     start is in tick 0; but never in a tick an advance() has processed
//     already (ticks 0 .. L-1 after an advance() at start + L*tick or up to
//     a tick later): a deadline filed into one of those, by scheduling,
//     reset() or a periodic timeout's next run, waits for the end of tick
//     L, as a Timer's worker files it. With a slack below the tick, at its
//     deadline.
//   * advance() runs every pending timeout whose run time has come, in
//     deadline order, ties in the order scheduled (acceptance order), and
//     returns how many ran. A timeout a task schedules is filed after the
//     walk (`deferred`): it runs in a later advance() even if due. What a
//     task cancels before its turn does not run. Timeouts reset() or filed
//     again by a periodic run take a place the wheel decides: one reset()
//     to a later deadline stays filed by its old one until the walk reaches
//     it (docs/DESIGN.md, "LocalTimer") and then runs there if its new run
//     time has come too, out of deadline order. For them the model takes
//     the order from the real run (Advance()'s `observed`), provided the
//     others kept deadline order around them.
//   * A periodic timeout runs once per advance(): afterwards its next run by
//     its policy (as TimerModel's NextRun()), filed for a later advance().
//   * stop() from a task closes the timer (scheduling fails, the advance
//     ends after that task, later advances run nothing) and returns nothing;
//     what is pending stays pending until the next stop() returns it.
//   * cancel(), cancelAll(), reset(), takeTask(), the destructor as for a
//     Timer; cancelAll() from a task reaches what the running advance()'s
//     tasks scheduled and its own periodic timeout.
//   * newTimeout() checks, in this order: empty task (InvalidArgument),
//     closed (FailedPrecondition), pending count at max_pending_timeouts
//     (ResourceExhausted).
//
// Event::tick is the number of the advance() the task ran in (1 for the
// first advance() call), so that the comparison checks which advance() ran
// each timeout.
//
// This class is thread-compatible, and copyable: a race is checked by
// playing each order the two calls could take on a copy.

#ifndef TICKWHEEL_TESTS_MODEL_LOCAL_TIMER_MODEL_H_
#define TICKWHEEL_TESTS_MODEL_LOCAL_TIMER_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {

struct LocalModelConfig {
  int64_t tick_nanos = 1;
  bool zero_slack = false;  // slack 0 (below the tick): run at the deadline
  int64_t max_pending = 0;  // <= 0: unlimited
  int64_t clock_start = 0;  // the ManualClock's reading at Create()
};

class LocalTimerModel {
 public:
  using State = TimerModel::State;

  explicit LocalTimerModel(LocalModelConfig config);

  // newTimeout(), newTimeoutAt() (`at` a clock reading) and newPeriodic()
  // from the owner thread, outside advance(): the attempt's id (ids count
  // every attempt from 0) and `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, Missed missed, Code* code);
  bool Cancel(int64_t id);
  int64_t CancelAll();
  bool Reset(int64_t id, absl::Duration delay);
  bool ResetAt(int64_t id, int64_t at);
  // Moves the clock (never back).
  void AdvanceClock(int64_t nanos);
  // advance(): returns how many runs. `observed` orders reset and periodic
  // timeouts (see the header comment). `cancel_in_run`: a cancel() from
  // another thread that lands in that (periodic) timeout's run in this
  // advance(), as it starts (`at_run_start`: before what the task does) or
  // right after it, so that it runs no more.
  int64_t Advance(const std::vector<Event>* observed = nullptr,
                  int64_t cancel_in_run = -1, bool at_run_start = false);
  // Whether the last Advance()'s `cancel_in_run` cancelled its timeout.
  bool cancelled_in_run() const { return cancelled_in_run_; }
  std::vector<int64_t> Stop();
  bool TakeTask(int64_t id);
  void Destroy();

  // The earliest run time of a pending timeout (a clock reading), or
  // nullopt when none will ever come (nothing pending, only saturated
  // deadlines, or closed).
  std::optional<int64_t> EarliestRunTime() const;

  int64_t Pending() const { return pending_; }
  int64_t now() const { return now_; }
  int64_t next_id() const { return static_cast<int64_t>(nodes_.size()); }
  bool closed() const { return closed_; }
  bool destroyed() const { return destroyed_; }
  int64_t advances() const { return advances_; }
  int64_t total_runs() const { return total_runs_; }
  int64_t throws() const { return throws_; }
  const std::vector<Event>& events() const { return events_; }

  State state(int64_t id) const { return nodes_[id].state; }
  bool IsExpired(int64_t id) const { return state(id) == State::kRan; }
  bool IsCancelled(int64_t id) const;
  bool IsPeriodic(int64_t id) const { return nodes_[id].periodic; }
  bool CapturesAlive(int64_t id) const { return nodes_[id].captures_alive; }
  int64_t ClockDeadline(int64_t id) const { return nodes_[id].deadline; }
  // False where the contract leaves deadline() open: a periodic timeout
  // that ended inside its own run keeps that run's deadline or the next.
  bool DeadlineKnown(int64_t id) const;
  // Another thread's cancel() ended periodic timeout `id` at a moment the
  // real run does not show (before, in or after a run): deadline() open.
  void OpenDeadline(int64_t id) { nodes_[id].ended_in_run = true; }

  // "" when the model's own history obeys the contract: never early, a
  // one-shot timeout runs at most once, deadline order within one
  // advance() (but for reset and periodic timeouts), a child never in its
  // parent's advance(), the pending count.
  std::string CheckContract() const;
  std::string Describe() const;

 private:
  struct Node {
    State state = State::kRejected;
    int64_t deadline = 0;    // a clock reading, as Timeout::deadline() reads
    int64_t seq = 0;         // acceptance order, for ties
    int64_t first_tick = 0;  // ticks processed when it was last filed
    TaskAction action;
    bool captures_alive = false;
    bool deferred = false;    // scheduled by a task of the running advance()
    bool order_free = false;  // reset or periodic: ties in the wheel's order
    bool periodic = false;
    int64_t period = 0;
    Missed missed = Missed::kSkip;
    int64_t runs = 0;
    bool ended_in_run = false;   // a periodic one, cancelled by its own run
    int64_t parent_advance = 0;  // the advance() whose task scheduled it
  };
  struct Run {
    int64_t deadline;  // the run's deadline
    int64_t advance;   // which advance()
    bool order_free;   // a reset or periodic timeout's (see above)
  };

  int64_t Accept(bool empty_task, int64_t deadline, TaskAction action,
                 Code* code);
  // The run time of `n` as a clock reading; nullopt if it never comes.
  std::optional<int64_t> RunTime(const Node& n) const;
  bool Due(const Node& n) const;
  std::vector<int64_t> RunOrder(const std::vector<Event>* observed) const;
  // One run of `id`; true when a task closed the timer.
  bool RunOnce(int64_t id, int64_t cancel_in_run, bool at_run_start);

  LocalModelConfig config_;
  std::vector<Node> nodes_;
  std::vector<Run> runs_;  // one per kRan event, in order
  int64_t now_;
  int64_t start_;
  int64_t pending_ = 0;
  int64_t advances_ = 0;
  int64_t ticks_ = 0;  // ticks processed by the advance() calls so far
  int64_t total_runs_ = 0;
  int64_t throws_ = 0;
  bool in_advance_ = false;
  bool cancelled_in_run_ = false;
  bool closed_ = false;     // stop() was called (from a task or not)
  bool collected_ = false;  // what was pending is stopped (kStopped)
  // Collected by an advance() in which a task called stop(): for the next
  // Stop().
  std::vector<int64_t> collected_by_advance_;
  bool destroyed_ = false;
  std::vector<Event> events_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_LOCAL_TIMER_MODEL_H_
