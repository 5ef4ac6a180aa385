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

}  // namespace

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
  return fmt::format("{{repeat={} child_delay={} cancel_prev={} stop={} throw={}}}",
                     repeat, absl::FormatDuration(child_delay), cancel_previous,
                     try_stop, throw_after);
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
  n.deadline = SatAdd(std::max<int64_t>(0, now_ - start_),
                      std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay)));
  n.first_tick = first_tick;
  n.action = action;
  n.captures_alive = true;
  ++pending_;
  return id;
}

int64_t TimerModel::Schedule(bool empty_task, absl::Duration delay,
                             TaskAction action, Code* code) {
  return Accept(empty_task, delay, action, ticks_, code);
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
  return n.state == State::kPending && n.ran_tick < 0 && n.first_tick == ticks_ &&
         RawDueTick(n) < n.first_tick;
}

void TimerModel::ResolveOverdue(int64_t id, bool ran_at_once) {
  if (!ran_at_once) return;  // due at first_tick, the next boundary: as is
  // It ran in a pass of its own at the current time, in its own (ended) tick.
  RunNode(id, RawDueTick(nodes_[id]), ticks_);
}

void TimerModel::RunNode(int64_t id, int64_t tick, int64_t pass_end) {
  nodes_[id].state = State::kRan;
  nodes_[id].ran_tick = tick;
  --pending_;  // the slot is given back before the task runs
  const int64_t clock = now_;
  const TaskAction action = nodes_[id].action;
  events_.push_back({Event::Kind::kRan, id, tick, clock, -1, 0});
  if (action.repeat > 0) {
    Code code;
    const int64_t child =
        Accept(false, action.child_delay, action.Child(), pass_end, &code);
    events_.push_back({Event::Kind::kChildScheduled, id, tick, clock, child,
                       static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = Cancel(id - 1);
    events_.push_back({Event::Kind::kCancelledOther, id, tick, clock, id - 1,
                       ok ? 1 : 0});
  }
  if (action.try_stop) {
    events_.push_back({Event::Kind::kStopFromTask, id, tick, clock, -1,
                       static_cast<int>(Code::kFailedPrecondition)});
  }
  if (action.throw_after) ++throws_;
  nodes_[id].captures_alive = false;  // destroyed after the run
}

void TimerModel::Advance(absl::Duration d) {
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
    for (int64_t id = 0; id < next_id(); ++id) {
      if (nodes_[id].state == State::kPending && DueTick(nodes_[id]) == next) {
        RunNode(id, next, pass_end);
      }
    }
    tick = next + 1;
  }
  ticks_ = pass_end;
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
    return nodes_[a].deadline < nodes_[b].deadline;
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
  return SatAdd(start_, nodes_[id].deadline);
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
    if (++runs[e.id] > 1) return fmt::format("task {} ran twice", e.id);
    if (e.tick < last_tick) {
      return fmt::format("task {} ran at tick {} after tick {}", e.id, e.tick,
                         last_tick);
    }
    last_tick = e.tick;
    const Node& n = nodes_[e.id];
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
    if (ran != (n.state == State::kRan)) {
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
        "  #{} {} deadline={} due={} first_tick={} ran_tick={} captures={} "
        "action={}\n",
        id, StateName(n.state), n.deadline, DueTick(n), n.first_tick,
        n.ran_tick, n.captures_alive, n.action.ToString());
  }
  return s;
}

}  // namespace tickwheel::model
