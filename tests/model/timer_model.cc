#include "tests/model/timer_model.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace tickwheel::model {
namespace {

int64_t SatAdd(int64_t a, int64_t b) {
  const __int128 sum = static_cast<__int128>(a) + b;
  if (sum > INT64_MAX) return INT64_MAX;
  if (sum < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(sum);
}

int64_t SatSub(int64_t a, int64_t b) {
  const __int128 diff = static_cast<__int128>(a) - b;
  if (diff > INT64_MAX) return INT64_MAX;
  if (diff < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(diff);
}

}  // namespace

int64_t ModelDelayNanos(absl::Duration d) {
  return std::max<int64_t>(
      0, absl::ToInt64Nanoseconds(absl::Ceil(d, absl::Nanoseconds(1))));
}

int64_t NextPeriodicRun(Missed policy, int64_t due, int64_t period,
                        int64_t now) {
  const int64_t next = SatAdd(due, period);
  if (next > now) return next;
  // Grid times in (due, now]: at least one, since due + period <= now; up
  // to 2^64 - 1, hence 128 bits.
  const __int128 missed = (static_cast<__int128>(now) - due) / period;
  __int128 run = next;
  switch (policy) {
    case Missed::kSkip:
      run = due + (missed + 1) * period;
      break;
    case Missed::kBurst:
      if (missed > kModelMaxBurst) {
        run = due + (missed - kModelMaxBurst + 1) * period;
      }
      break;
    case Missed::kDelay:
      run = static_cast<__int128>(now) + period;
      break;
  }
  return run > INT64_MAX ? INT64_MAX : static_cast<int64_t>(run);
}

Code CodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return Code::kOk;
    case absl::StatusCode::kInvalidArgument:
      return Code::kInvalidArgument;
    case absl::StatusCode::kFailedPrecondition:
      return Code::kFailedPrecondition;
    case absl::StatusCode::kResourceExhausted:
      return Code::kResourceExhausted;
    default:
      return Code::kOther;
  }
}

const char* MissedName(Missed missed) {
  switch (missed) {
    case Missed::kSkip:
      return "kSkip";
    case Missed::kBurst:
      return "kBurst";
    case Missed::kDelay:
      return "kDelay";
  }
  return "?";
}

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kOther:
      break;
  }
  return "Other";
}

std::string TaskAction::ToString() const {
  std::string s =
      fmt::format("{{repeat={} child_delay={} cancel_prev={} stop={} throw={}",
                  repeat, absl::FormatDuration(child_delay), cancel_previous,
                  try_stop, throw_after);
  if (cancel_all) s += " cancel_all=1";
  if (periodic_runs > 0) s += fmt::format(" runs={}", periodic_runs);
  return s + "}";
}

std::string Event::ToString() const {
  switch (kind) {
    case Kind::kRan:
      return fmt::format("ran(id={} tick={} clock={})", id, tick, clock);
    case Kind::kChildScheduled:
      return fmt::format("child(id={} tick={} child={} -> {})", id, tick, other,
                         CodeName(static_cast<Code>(result)));
    case Kind::kCancelledOther:
      return fmt::format("cancel(id={} tick={} target={} -> {})", id, tick,
                         other, result != 0);
    case Kind::kStopFromTask:
      return fmt::format("stop(id={} tick={} -> {})", id, tick,
                         CodeName(static_cast<Code>(result)));
    case Kind::kCancelAllFromTask:
      return fmt::format("cancelAll(id={} tick={} -> {})", id, tick, result);
    case Kind::kCancelledSelf:
      return fmt::format("cancelSelf(id={} tick={} -> {})", id, tick,
                         result != 0);
  }
  return "?";
}

const char* TimerModel::StateName(State s) {
  switch (s) {
    case State::kRejected:
      return "rejected";
    case State::kPending:
      return "pending";
    case State::kRan:
      return "ran";
    case State::kCancelled:
      return "cancelled";
    case State::kStopped:
      return "stopped";
    case State::kStoppedTaken:
      return "stopped-taken";
  }
  return "?";
}

TimerModel::TimerModel(ModelConfig config)
    : config_(config), now_(config.clock_start) {
  if (local()) {  // a LocalTimer's startTime is its Create()
    started_ = true;
    start_ = now_;
  }
}

int64_t TimerModel::RawDueTick(const Node& n) const {
  // The first tick k whose end, (k + 1) * tick, is at or after the deadline.
  return n.deadline <= 0 ? 0 : (n.deadline - 1) / config_.tick_nanos;
}

int64_t TimerModel::DueTick(const Node& n) const {
  return std::max(RawDueTick(n), n.first_tick);
}

void TimerModel::SetDeadline(int64_t id, int64_t clock_deadline) {
  Node& n = nodes_[id];
  n.clock_deadline = clock_deadline;
  // As the wheel reads it: INT64_MAX never comes, whatever startTime is.
  n.deadline =
      clock_deadline == INT64_MAX ? INT64_MAX : SatSub(clock_deadline, start_);
}

int64_t TimerModel::Accept(bool empty_task, int64_t clock_deadline,
                           TaskAction action, Code* code) {
  const int64_t id = next_id();
  nodes_.emplace_back();
  if (empty_task) {
    *code = Code::kInvalidArgument;
  } else if (closed_) {
    *code = Code::kFailedPrecondition;
  } else if (config_.max_pending > 0 && pending_ >= config_.max_pending) {
    *code = Code::kResourceExhausted;
  } else {
    *code = Code::kOk;
  }
  if (*code != Code::kOk) return id;  // the task is destroyed on return
  if (!started_) {
    started_ = true;
    start_ = now_;
  }
  Node& n = nodes_.back();
  n.state = State::kPending;
  SetDeadline(id, clock_deadline);
  n.first_tick = FilingTick();
  n.filed_tick = DueTick(n);
  n.action = action;
  n.captures_alive = true;
  n.deferred = in_pass_;
  n.parent_advance = in_pass_ ? advances_ : 0;
  n.by_task = in_pass_;
  ++pending_;
  return id;
}

int64_t TimerModel::Schedule(bool empty_task, absl::Duration delay,
                             TaskAction action, Code* code) {
  return Accept(empty_task, SatAdd(now_, ModelDelayNanos(delay)), action, code);
}

int64_t TimerModel::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  // A deadline in the past is taken as now.
  return Accept(false, std::max(at, now_), action, code);
}

int64_t TimerModel::SchedulePeriodic(absl::Duration initial_delay,
                                     absl::Duration period, TaskAction action,
                                     Missed missed, Code* code) {
  if (period <= absl::ZeroDuration() || period == absl::InfiniteDuration()) {
    nodes_.emplace_back();  // refused before anything else
    *code = Code::kInvalidArgument;
    return next_id() - 1;
  }
  const int64_t id = Schedule(false, initial_delay, action, code);
  if (*code == Code::kOk) {
    Node& n = nodes_[id];
    n.periodic = true;
    // A Timer's worker files a periodic timeout itself, even its first run;
    // a LocalTimer files the first run in order as a one-shot one.
    n.order_free = !local();
    n.period = std::max<int64_t>(1, ModelDelayNanos(period));
    n.missed = missed;
  }
  return id;
}

int64_t TimerModel::CancelAll() { return CancelAllExcept({}); }

int64_t TimerModel::CancelAllExcept(const std::vector<int64_t>& stopped) {
  int64_t count = 0;
  for (int64_t id = 0; id < next_id(); ++id) {
    if (std::find(stopped.begin(), stopped.end(), id) != stopped.end()) {
      continue;
    }
    if (Cancel(id)) ++count;
  }
  return count;
}

int64_t TimerModel::ResetDeadline(absl::Duration delay) const {
  return SatAdd(now_, ModelDelayNanos(delay));
}

bool TimerModel::Reset(int64_t id, absl::Duration delay) {
  return ResetAt(id, ResetDeadline(delay));
}

bool TimerModel::ResetAt(int64_t id, int64_t at) {
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kPending) return false;
  at = std::max(at, now_);  // a deadline in the past is taken as now
  const bool earlier = at < n.clock_deadline;
  SetDeadline(id, at);
  n.first_tick = ticks_;
  n.order_free = true;
  if (earlier) {
    // A Timer's worker files it again at once (worker.cc, ProcessNotices).
    n.filed_tick = DueTick(n);
    n.moved_later = false;
  } else {
    // It stays where it is filed until that tick comes.
    n.moved_later = DueTick(n) > n.filed_tick;
  }
  return true;
}

bool TimerModel::Cancel(int64_t id) {
  // Once stopped, nothing is pending, so this returns false.
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kPending) return false;
  n.state = State::kCancelled;
  n.captures_alive = false;  // cancel() destroys the task before returning
  --pending_;
  return true;
}

void TimerModel::AdvanceClock(int64_t nanos) {
  now_ = SatAdd(now_, std::max<int64_t>(0, nanos));
}

int64_t TimerModel::Advance(const std::vector<Event>* observed,
                            int64_t cancel_in_run, bool at_run_start) {
  cancelled_in_run_ = false;
  int64_t ran;
  if (local()) {
    ran = LocalPass(observed, cancel_in_run, at_run_start);
  } else {
    ran = ThreadedPass(observed);
  }
  for (Node& n : nodes_) n.deferred = false;  // filed once the walk is over
  return ran;
}

int64_t TimerModel::Advance(absl::Duration d,
                            const std::vector<Event>* observed) {
  AdvanceClock(absl::ToInt64Nanoseconds(d));
  return Advance(observed);
}

bool TimerModel::RunOnce(int64_t id, int64_t reported_tick,
                         int64_t cancel_in_run, bool at_run_start) {
  const bool periodic = nodes_[id].periodic;
  ++nodes_[id].runs;
  ++total_runs_;
  if (!periodic) {
    nodes_[id].state = State::kRan;
    --pending_;  // the slot is given back before the task runs
  }
  const int64_t clock = now_;
  const int64_t tick = reported_tick;
  runs_.push_back(
      {nodes_[id].clock_deadline, advances_, nodes_[id].order_free});
  events_.push_back({Event::Kind::kRan, id, tick, clock, -1, 0});
  if (periodic && cancel_in_run == id && at_run_start) {
    cancelled_in_run_ = Cancel(id);  // another thread's, as the run starts
  }
  const TaskAction action = nodes_[id].action;
  if (action.repeat > 0) {
    Code code;
    const int64_t child =
        Schedule(false, action.child_delay, action.Child(), &code);
    events_.push_back({Event::Kind::kChildScheduled, id, tick, clock, child,
                       static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = Cancel(id - 1);
    events_.push_back(
        {Event::Kind::kCancelledOther, id, tick, clock, id - 1, ok ? 1 : 0});
  }
  if (action.cancel_all) {
    // Includes a periodic task's own timeout: this run is its last.
    const int64_t count = CancelAll();
    events_.push_back({Event::Kind::kCancelAllFromTask, id, tick, clock, -1,
                       static_cast<int>(count)});
  }
  if (periodic && action.periodic_runs > 0 &&
      nodes_[id].runs == action.periodic_runs) {
    const bool ok = Cancel(id);
    events_.push_back(
        {Event::Kind::kCancelledSelf, id, tick, clock, id, ok ? 1 : 0});
  }
  bool closed_here = false;
  if (action.try_stop) {
    // A Timer refuses stop() from its own task. A LocalTimer closes: the
    // call returns nothing (result: how many it returned), and the
    // advance() ends after this task.
    closed_here = local();
    if (closed_here) closed_ = true;
    events_.push_back(
        {Event::Kind::kStopFromTask, id, tick, clock, -1,
         closed_here ? 0 : static_cast<int>(Code::kFailedPrecondition)});
  }
  if (action.throw_after) ++throws_;
  Node& n = nodes_[id];
  if (periodic && n.state == State::kPending) {
    if (cancel_in_run == id && !at_run_start) {
      cancelled_in_run_ = Cancel(id);  // another thread's, right after
      return closed_here;
    }
    // Its next run: filed again after the pass, or (a Timer's kBurst) at
    // once if it has come.
    const int64_t next =
        NextPeriodicRun(n.missed, n.clock_deadline, n.period, now_);
    SetDeadline(id, next);
    n.first_tick = pass_end_;
    n.filed_tick = DueTick(n);
    n.moved_later = false;
    n.deferred = true;
    n.order_free = true;
    if (!local()) return next <= now_ && next != INT64_MAX;
  } else if (periodic) {
    n.ended_in_run = true;  // its task goes when the run returns
  } else {
    n.captures_alive = false;  // destroyed after the run
  }
  return closed_here;
}

std::vector<int64_t> TimerModel::Stop() {
  closed_ = true;
  if (collected_) return std::exchange(collected_by_advance_, {});
  collected_ = true;
  std::vector<int64_t> result;
  for (int64_t id = 0; id < next_id(); ++id) {
    Node& n = nodes_[id];
    if (n.state == State::kPending) {
      n.state = State::kStopped;
      result.push_back(id);
    }
  }
  pending_ = 0;
  std::stable_sort(result.begin(), result.end(), [&](int64_t a, int64_t b) {
    return nodes_[a].clock_deadline < nodes_[b].clock_deadline;
  });
  return result;
}

bool TimerModel::TakeTask(int64_t id) {
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kStopped) return false;
  n.state = State::kStoppedTaken;
  n.captures_alive = false;
  return true;
}

void TimerModel::Destroy() {
  for (int64_t id : Stop()) TakeTask(id);
  destroyed_ = true;
}

bool TimerModel::IsCancelled(int64_t id) const {
  switch (state(id)) {
    case State::kCancelled:
    case State::kStopped:
    case State::kStoppedTaken:
      return true;
    default:
      return false;
  }
}

bool TimerModel::DeadlineKnown(int64_t id) const {
  const Node& n = nodes_[id];
  if (!n.periodic) return true;
  return local() ? !n.ended_in_run : n.state != State::kCancelled;
}

std::string TimerModel::Describe() const {
  std::string s = fmt::format(
      "model ({}): start={} now={} (+{}) ticks={} advances={} pending={} "
      "closed={} collected={} destroyed={}\n",
      local() ? "LocalTimer" : "Timer", start_, now_,
      static_cast<int64_t>(
          std::min<__int128>(static_cast<__int128>(now_) - start_, INT64_MAX)),
      ticks_, advances_, pending_, closed_, collected_, destroyed_);
  for (int64_t id = 0; id < next_id(); ++id) {
    const Node& n = nodes_[id];
    if (n.state == State::kRejected) {
      s += fmt::format("  #{} rejected\n", id);
      continue;
    }
    std::string when;
    if (local()) {
      const std::optional<int64_t> at = RunTime(n);
      when =
          at.has_value() ? fmt::format("run_time={}", *at) : "run_time=never";
    } else {
      when = fmt::format("due={} ran_tick={}", DueTick(n), n.ran_tick);
    }
    s += fmt::format(
        "  #{} {}{} deadline={} (+{}) {} first_tick={} captures={} "
        "action={}{}{}\n",
        id, StateName(n.state), n.periodic ? " periodic" : "", n.clock_deadline,
        n.deadline, when, n.first_tick, n.captures_alive, n.action.ToString(),
        n.periodic ? fmt::format(" period={} {} runs={}", n.period,
                                 MissedName(n.missed), n.runs)
                   : "",
        n.order_free ? " order-free" : "");
  }
  return s;
}

}  // namespace tickwheel::model
