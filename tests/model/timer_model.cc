#include "tests/model/timer_model.h"

#include <algorithm>
#include <cstdint>

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
    : config_(config), now_(config.clock_start) {}

int64_t TimerModel::RawDueTick(const Node& n) const {
  // The first tick k whose end, (k + 1) * tick, is at or after the deadline.
  return n.deadline <= 0 ? 0 : (n.deadline - 1) / config_.tick_nanos;
}

int64_t TimerModel::DueTick(const Node& n) const {
  return std::max(RawDueTick(n), n.first_tick);
}

int64_t TimerModel::Accept(bool empty_task, absl::Duration delay,
                           TaskAction action, int64_t first_tick, Code* code) {
  return Accept(empty_task, When::kDelay, ModelDelayNanos(delay), action,
                first_tick, code);
}

void TimerModel::SetDeadline(int64_t id, int64_t clock_deadline) {
  Node& n = nodes_[id];
  n.clock_deadline = clock_deadline;
  // As the wheel reads it: INT64_MAX never comes, whatever startTime is.
  n.deadline =
      clock_deadline == INT64_MAX ? INT64_MAX : SatSub(clock_deadline, start_);
}

int64_t TimerModel::Accept(bool empty_task, When when, int64_t nanos,
                           TaskAction action, int64_t first_tick, Code* code) {
  const int64_t id = next_id();
  nodes_.emplace_back();
  if (empty_task) {
    *code = Code::kInvalidArgument;
  } else if (stopped_) {
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
  SetDeadline(id, when == When::kAt ? nanos
                                    : SatAdd(std::max(now_, start_),
                                             std::max<int64_t>(0, nanos)));
  n.first_tick = first_tick;
  n.filed_tick = DueTick(n);
  n.action = action;
  n.captures_alive = true;
  ++pending_;
  return id;
}

int64_t TimerModel::Schedule(bool empty_task, absl::Duration delay,
                             TaskAction action, Code* code) {
  return Accept(empty_task, delay, action, ticks_, code);
}

int64_t TimerModel::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  // A deadline in the past is taken as now.
  return Accept(false, When::kAt, std::max(at, now_), action, ticks_, code);
}

int64_t TimerModel::SchedulePeriodic(absl::Duration initial_delay,
                                     absl::Duration period, TaskAction action,
                                     Missed missed, Code* code) {
  if (period <= absl::ZeroDuration() || period == absl::InfiniteDuration()) {
    nodes_.emplace_back();  // refused before anything else
    *code = Code::kInvalidArgument;
    return next_id() - 1;
  }
  const int64_t id = Accept(false, initial_delay, action, ticks_, code);
  if (*code == Code::kOk) {
    nodes_[id].periodic = true;
    nodes_[id].order_free = true;
    nodes_[id].period = std::max<int64_t>(1, ModelDelayNanos(period));
    nodes_[id].missed = missed;
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
    // The worker files it again at once (worker.cc, ProcessNotices).
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

bool TimerModel::Overdue(int64_t id) const {
  const Node& n = nodes_[id];
  return n.state == State::kPending && n.first_tick == ticks_ &&
         RawDueTick(n) < n.first_tick;
}

void TimerModel::ResolveOverdue(int64_t id, bool ran_at_once,
                                int64_t observed_tick) {
  if (!ran_at_once) return;  // due at first_tick, the next boundary: as is
  // It ran in a pass of its own at the current time, in its own (ended) tick.
  // What metrics().ticks reads inside it depends on how far the worker had
  // got: its due tick, or the ticks the worker had processed (it notes a
  // tick at its first run only, and sleeps through ticks without work).
  // Anything from its due tick to the current one is taken as observed.
  const int64_t tick = RawDueTick(nodes_[id]);
  const bool plausible = observed_tick >= tick && observed_tick <= ticks_;
  nodes_[id].ran_overdue = true;
  RunNode(id, tick, ticks_, plausible ? observed_tick : tick);
}

void TimerModel::RunNode(int64_t id, int64_t tick, int64_t pass_end,
                         int64_t reported_tick) {
  nodes_[id].ran_tick = tick;
  while (RunOnce(id, pass_end, reported_tick)) {
  }
}

bool TimerModel::RunOnce(int64_t id, int64_t pass_end, int64_t reported_tick) {
  const bool periodic = nodes_[id].periodic;
  ++nodes_[id].runs;
  if (!periodic) {
    nodes_[id].state = State::kRan;
    --pending_;  // the slot is given back before the task runs
  }
  const int64_t clock = now_;
  const TaskAction action = nodes_[id].action;
  events_.push_back({Event::Kind::kRan, id, reported_tick, clock, -1, 0});
  if (action.repeat > 0) {
    Code code;
    const int64_t child =
        Accept(false, action.child_delay, action.Child(), pass_end, &code);
    events_.push_back({Event::Kind::kChildScheduled, id, reported_tick, clock,
                       child, static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = Cancel(id - 1);
    events_.push_back({Event::Kind::kCancelledOther, id, reported_tick, clock,
                       id - 1, ok ? 1 : 0});
  }
  if (action.cancel_all) {
    // Includes a periodic task's own timeout: this run is its last.
    const int64_t count = CancelAll();
    events_.push_back({Event::Kind::kCancelAllFromTask, id, reported_tick,
                       clock, -1, static_cast<int>(count)});
  }
  if (periodic && action.periodic_runs > 0 &&
      nodes_[id].runs == action.periodic_runs) {
    const bool ok = Cancel(id);
    events_.push_back({Event::Kind::kCancelledSelf, id, reported_tick, clock,
                       id, ok ? 1 : 0});
  }
  if (action.try_stop) {
    events_.push_back({Event::Kind::kStopFromTask, id, reported_tick, clock, -1,
                       static_cast<int>(Code::kFailedPrecondition)});
  }
  if (action.throw_after) ++throws_;
  Node& n = nodes_[id];
  if (periodic && n.state == State::kPending) {
    // Its next run: at once if it has come (a burst), else filed again
    // after the pass.
    const int64_t next =
        NextPeriodicRun(n.missed, n.clock_deadline, n.period, now_);
    SetDeadline(id, next);
    n.first_tick = pass_end;
    n.filed_tick = DueTick(n);
    n.moved_later = false;
    return next <= now_ && next != INT64_MAX;
  }
  n.captures_alive = false;  // destroyed after the run
  return false;
}

std::vector<int64_t> TimerModel::OrderWithinTick(
    const std::vector<int64_t>& due, int64_t tick,
    const std::vector<Event>* observed) const {
  bool any_free = false;
  for (int64_t id : due) any_free |= nodes_[id].order_free;
  if (!any_free || observed == nullptr) return due;
  // The real timer's runs in this tick, from where the two event lists
  // part (they agree up to here, or the comparison reports it anyway).
  std::vector<int64_t> order;
  for (size_t i = events_.size(); i < observed->size(); ++i) {
    const Event& e = (*observed)[i];
    if (e.kind != Event::Kind::kRan) continue;
    if (e.tick != tick) break;
    // A burst's further runs follow its first at once.
    if (!order.empty() && e.id == order.back() && nodes_[e.id].periodic) {
      continue;
    }
    if (std::find(due.begin(), due.end(), e.id) == due.end() ||
        std::find(order.begin(), order.end(), e.id) != order.end()) {
      return due;  // not the same set
    }
    order.push_back(e.id);
  }
  // What did not run (a task cancelled it first) goes last, in id order.
  for (int64_t id : due) {
    if (std::find(order.begin(), order.end(), id) == order.end()) {
      order.push_back(id);
    }
  }
  int64_t last_fixed = -1;
  for (int64_t id : order) {
    if (nodes_[id].order_free) continue;
    if (id < last_fixed) return due;  // others must keep acceptance order
    last_fixed = id;
  }
  return order;
}

void TimerModel::Advance(absl::Duration d, const std::vector<Event>* observed) {
  now_ = SatAdd(now_, std::max<int64_t>(0, absl::ToInt64Nanoseconds(d)));
  if (!started_ || stopped_) return;
  const int64_t pass_end = static_cast<int64_t>(
      (static_cast<__int128>(now_) - start_) / config_.tick_nanos);
  if (pass_end <= ticks_) return;
  // One pass over every tick that has ended, in order; in each tick, what is
  // due runs in acceptance order. Children get first_tick = pass_end, so the
  // loop never runs them in this pass.
  for (int64_t tick = ticks_;;) {
    int64_t next = pass_end;  // the next tick with work, skipping empty ones
    for (const Node& n : nodes_) {
      if (n.state == State::kPending && DueTick(n) >= tick) {
        next = std::min(next, DueTick(n));
      }
    }
    if (next >= pass_end) break;
    std::vector<int64_t> due;
    for (int64_t id = 0; id < next_id(); ++id) {
      if (nodes_[id].state == State::kPending && DueTick(nodes_[id]) == next) {
        due.push_back(id);
      }
    }
    for (int64_t id : OrderWithinTick(due, next, observed)) {
      // A task run earlier in this tick may have cancelled it.
      if (nodes_[id].state == State::kPending && DueTick(nodes_[id]) == next) {
        RunNode(id, next, pass_end, next);
      }
    }
    tick = next + 1;
  }
  ticks_ = pass_end;
  // The worker has now processed the ticks where moved timeouts were filed,
  // and filed them again by their new deadlines.
  for (Node& n : nodes_) {
    if (n.state == State::kPending && n.moved_later &&
        n.filed_tick < pass_end) {
      n.moved_later = false;
      n.filed_tick = DueTick(n);
    }
  }
}

std::vector<int64_t> TimerModel::Stop() {
  std::vector<int64_t> result;
  if (stopped_) return result;
  stopped_ = true;
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

int64_t TimerModel::ClockDeadline(int64_t id) const {
  return nodes_[id].clock_deadline;
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

bool TimerModel::CapturesAlive(int64_t id) const {
  return nodes_[id].captures_alive;
}

std::string TimerModel::CheckContract() const {
  std::vector<int> runs(nodes_.size(), 0);
  int64_t last_tick = -1;
  for (const Event& e : events_) {
    if (e.kind != Event::Kind::kRan) continue;
    const Node& n = nodes_[e.id];
    if (++runs[e.id] > 1 && !n.periodic) {
      return fmt::format("task {} ran twice", e.id);
    }
    // An overdue timeout run at once runs in its own ended tick, which for a
    // deadline in the past (newTimeoutAt()) may come before earlier runs.
    if (!n.ran_overdue) {
      if (e.tick < last_tick) {
        return fmt::format("task {} ran at tick {} after tick {}", e.id, e.tick,
                           last_tick);
      }
      last_tick = e.tick;
    }
    // A periodic task's deadline is its next run by now.
    if (n.periodic) continue;
    const __int128 tick_end =
        static_cast<__int128>(e.tick + 1) * config_.tick_nanos;
    if (tick_end < n.deadline || static_cast<__int128>(e.clock) - start_ <
                                     static_cast<__int128>(n.deadline)) {
      return fmt::format("task {} ran early: tick {} clock {} deadline {}",
                         e.id, e.tick, e.clock - start_, n.deadline);
    }
  }
  int64_t pending = 0;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& n = nodes_[id];
    const bool ran = runs[id] == 1;
    if (n.periodic) {
      if (runs[id] != n.runs) {
        return fmt::format("periodic task {} ran {} times, counted {}", id,
                           runs[id], n.runs);
      }
    } else if (ran != (n.state == State::kRan)) {
      return fmt::format("task {} state {} but ran {} times", id,
                         StateName(n.state), runs[id]);
    }
    if (n.state == State::kPending) {
      ++pending;
      if (stopped_) return fmt::format("task {} pending after stop()", id);
      if (DueTick(n) < ticks_) {
        return fmt::format("task {} still pending after its tick {}", id,
                           DueTick(n));
      }
    }
    if (n.state == State::kRejected && n.captures_alive) {
      return fmt::format("rejected task {} still holds captures", id);
    }
  }
  if (pending != pending_) {
    return fmt::format("pending count {} but {} tasks pending", pending_,
                       pending);
  }
  return "";
}

std::string TimerModel::Describe() const {
  std::string s = fmt::format(
      "model: start={} now={} (+{}) ticks={} pending={} stopped={} "
      "destroyed={}\n",
      start_, now_, now_ - start_, ticks_, pending_, stopped_, destroyed_);
  for (int64_t id = 0; id < next_id(); ++id) {
    const Node& n = nodes_[id];
    if (n.state == State::kRejected) {
      s += fmt::format("  #{} rejected\n", id);
      continue;
    }
    s += fmt::format(
        "  #{} {}{} deadline={} due={} first_tick={} ran_tick={} captures={} "
        "action={}{}{}\n",
        id, StateName(n.state), n.periodic ? " periodic" : "", n.deadline,
        DueTick(n), n.first_tick, n.ran_tick, n.captures_alive,
        n.action.ToString(),
        n.periodic ? fmt::format(" period={} {} runs={}", n.period,
                                 MissedName(n.missed), n.runs)
                   : "",
        n.order_free ? " order-free" : "");
  }
  return s;
}

}  // namespace tickwheel::model
