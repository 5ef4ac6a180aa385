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
//     before it returns.
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

// What a task does when it runs. Fixed when the task is scheduled, so that the
// model knows it as well as the real task does.
struct TaskAction {
  // > 0: schedule a child task with `child_delay` whose action is Child().
  int repeat = 0;
  absl::Duration child_delay = absl::ZeroDuration();
  // Cancel the timeout whose id is one less than this task's id.
  bool cancel_previous = false;
  // Call stop() on its own timer (must fail with FailedPrecondition).
  bool try_stop = false;
  // Throw an exception once done (the worker must log it and go on).
  bool throw_after = false;

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
  enum class Kind : int { kRan, kChildScheduled, kCancelledOther, kStopFromTask };
  Kind kind = Kind::kRan;
  int64_t id = 0;      // the running task
  int64_t tick = 0;    // metrics().ticks while it ran: the tick being processed
  int64_t clock = 0;   // the ManualClock reading while it ran
  int64_t other = -1;  // the child's or the cancelled task's id
  int result = 0;      // Code for kChildScheduled / kStopFromTask, bool for cancel

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

  // newTimeout() from the test thread. Returns the attempt's id (ids count every
  // attempt, accepted or not, from 0) and sets `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  // True when task `id`, just scheduled, was overdue: its tick had already
  // ended. Then the caller settles the real timer and reports with
  // ResolveOverdue() whether it ran at once.
  bool Overdue(int64_t id) const;
  void ResolveOverdue(int64_t id, bool ran_at_once);
  // Timeout::cancel() from the test thread.
  bool Cancel(int64_t id);
  // ManualClock::AdvanceAndSettle(d): runs every tick that ends by the new time.
  void Advance(absl::Duration d);
  // Timer::stop() from the test thread: the ids, earliest deadline first (ties
  // by id; the real timer's order among equal deadlines is not specified).
  std::vector<int64_t> Stop();
  // Timeout::takeTask(): true when a task came out.
  bool TakeTask(int64_t id);
  // ~Timer: stop(), and the tasks of what it returned are destroyed.
  void Destroy();

  int64_t Pending() const { return pending_; }
  int64_t next_id() const { return static_cast<int64_t>(nodes_.size()); }
  bool stopped() const { return stopped_; }
  bool destroyed() const { return destroyed_; }
  int64_t ticks_processed() const { return ticks_; }
  int64_t throws() const { return throws_; }
  const std::vector<Event>& events() const { return events_; }

  State state(int64_t id) const { return nodes_[id].state; }
  bool IsExpired(int64_t id) const { return state(id) == State::kRan; }
  bool IsCancelled(int64_t id) const;
  // True while the task's captures must still exist.
  bool CapturesAlive(int64_t id) const;
  int64_t Deadline(int64_t id) const { return nodes_[id].deadline; }
  // The deadline as a clock reading, saturated as the timer stores it:
  // deadlines past the end of the clock's range all read as its end, so
  // they tie (stop() may return them in any order).
  int64_t ClockDeadline(int64_t id) const;

  // "" when the model's own history obeys the contract; else what broke.
  std::string CheckContract() const;
  // A one-line summary, for failure messages.
  std::string Describe() const;
  static const char* StateName(State s);

 private:
  struct Node {
    State state = State::kRejected;
    int64_t deadline = 0;       // nanoseconds after startTime
    int64_t first_tick = 0;     // the tick being processed when it was accepted
    TaskAction action;
    bool captures_alive = false;
    int64_t ran_tick = -1;
  };

  int64_t Accept(bool empty_task, absl::Duration delay, TaskAction action,
                 int64_t first_tick, Code* code);
  // Runs pending task `id` in tick `tick` of a pass that ends before tick
  // `pass_end` (children are due at pass_end at the earliest).
  void RunNode(int64_t id, int64_t tick, int64_t pass_end);
  int64_t RawDueTick(const Node& n) const;
  int64_t DueTick(const Node& n) const;

  const ModelConfig config_;
  std::vector<Node> nodes_;
  int64_t now_;             // ManualClock reading
  bool started_ = false;
  int64_t start_ = 0;       // startTime (clock reading)
  int64_t ticks_ = 0;       // ticks processed
  int64_t pending_ = 0;
  bool stopped_ = false;
  bool destroyed_ = false;
  int64_t throws_ = 0;
  std::vector<Event> events_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_TIMER_MODEL_H_
