#include "tests/model/local_timer_model.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

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

LocalTimerModel::LocalTimerModel(LocalModelConfig config)
    : config_(config), now_(config.clock_start), start_(config.clock_start) {}

int64_t LocalTimerModel::Accept(bool empty_task, int64_t deadline,
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
  Node& n = nodes_.back();
  n.state = State::kPending;
  n.deadline = deadline;
  n.seq = id;
  n.first_tick = ticks_;  // a task's: the pass end, set before the walk
  n.action = action;
  n.captures_alive = true;
  n.deferred = in_advance_;
  n.parent_advance = in_advance_ ? advances_ : 0;
  ++pending_;
  return id;
}

int64_t LocalTimerModel::Schedule(bool empty_task, absl::Duration delay,
                                  TaskAction action, Code* code) {
  return Accept(empty_task, SatAdd(now_, ModelDelayNanos(delay)), action, code);
}

int64_t LocalTimerModel::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  return Accept(false, std::max(at, now_), action, code);
}

int64_t LocalTimerModel::SchedulePeriodic(absl::Duration initial_delay,
                                          absl::Duration period,
                                          TaskAction action, Missed missed,
                                          Code* code) {
  if (period <= absl::ZeroDuration() || period == absl::InfiniteDuration()) {
    nodes_.emplace_back();  // refused before anything else
    *code = Code::kInvalidArgument;
    return next_id() - 1;
  }
  const int64_t id = Schedule(false, initial_delay, action, code);
  if (*code == Code::kOk) {
    nodes_[id].periodic = true;
    nodes_[id].period = std::max<int64_t>(1, ModelDelayNanos(period));
    nodes_[id].missed = missed;
  }
  return id;
}

bool LocalTimerModel::Cancel(int64_t id) {
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kPending) return false;
  n.state = State::kCancelled;
  n.captures_alive = false;  // cancel() destroys the task before returning
  --pending_;
  return true;
}

int64_t LocalTimerModel::CancelAll() {
  int64_t count = 0;
  for (int64_t id = 0; id < next_id(); ++id) count += Cancel(id) ? 1 : 0;
  return count;
}

bool LocalTimerModel::Reset(int64_t id, absl::Duration delay) {
  return ResetAt(id, SatAdd(now_, ModelDelayNanos(delay)));
}

bool LocalTimerModel::ResetAt(int64_t id, int64_t at) {
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kPending) return false;
  n.deadline = std::max(at, now_);
  n.first_tick = ticks_;
  n.order_free = true;
  return true;
}

void LocalTimerModel::AdvanceClock(int64_t nanos) {
  now_ = SatAdd(now_, std::max<int64_t>(0, nanos));
}

std::optional<int64_t> LocalTimerModel::RunTime(const Node& n) const {
  if (n.deadline == INT64_MAX) return std::nullopt;
  if (config_.zero_slack) return n.deadline;
  // The end of the tick the deadline falls in, counted from startTime in
  // int64 nanoseconds (the distance saturates, as the wheel counts it); a
  // tick end past that range, or past the clock's, never comes.
  const __int128 rel =
      std::min<__int128>(static_cast<__int128>(n.deadline) - start_, INT64_MAX);
  const __int128 tick = std::max<__int128>(
      n.first_tick, rel <= 0 ? 0 : (rel - 1) / config_.tick_nanos);
  const __int128 end = (tick + 1) * config_.tick_nanos;
  if (end > INT64_MAX || start_ + end > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(start_ + end);
}

bool LocalTimerModel::Due(const Node& n) const {
  if (n.state != State::kPending || n.deferred) return false;
  const std::optional<int64_t> at = RunTime(n);
  return at.has_value() && *at <= now_;
}

std::optional<int64_t> LocalTimerModel::EarliestRunTime() const {
  if (closed_) return std::nullopt;
  std::optional<int64_t> earliest;
  for (const Node& n : nodes_) {
    if (n.state != State::kPending || n.deferred) continue;
    const std::optional<int64_t> at = RunTime(n);
    if (at.has_value() && (!earliest.has_value() || *at < *earliest)) {
      earliest = at;
    }
  }
  return earliest;
}

std::vector<int64_t> LocalTimerModel::RunOrder(
    const std::vector<Event>* observed) const {
  std::vector<int64_t> due;
  for (int64_t id = 0; id < next_id(); ++id) {
    if (Due(nodes_[id])) due.push_back(id);
  }
  auto by_deadline = [&](int64_t a, int64_t b) {
    const Node &x = nodes_[a], &y = nodes_[b];
    return x.deadline != y.deadline ? x.deadline < y.deadline : x.seq < y.seq;
  };
  std::sort(due.begin(), due.end(), by_deadline);
  if (observed == nullptr) return due;
  // The real advance()'s runs, from where the two event lists part (they
  // agree up to here, or the comparison reports it anyway).
  std::vector<int64_t> seen;
  for (size_t i = events_.size(); i < observed->size(); ++i) {
    const Event& e = (*observed)[i];
    if (e.kind == Event::Kind::kRan && e.tick == advances_) {
      seen.push_back(e.id);
    }
  }
  // Reset and periodic timeouts may run anywhere among the rest: the real
  // order, if the others keep deadline order in it.
  std::vector<int64_t> order;
  for (int64_t id : seen) {
    if (std::find(due.begin(), due.end(), id) != due.end() &&
        std::find(order.begin(), order.end(), id) == order.end()) {
      order.push_back(id);
    }
  }
  std::vector<int64_t> fixed;
  for (int64_t id : order) {
    if (!nodes_[id].order_free) fixed.push_back(id);
  }
  if (!std::is_sorted(fixed.begin(), fixed.end(), by_deadline)) return due;
  // What did not run (a task cancelled it first, or stopped the timer) goes
  // last, in deadline order; if the real run left out one it should have
  // run, the model runs it there and the events differ.
  for (int64_t id : due) {
    if (std::find(order.begin(), order.end(), id) == order.end()) {
      order.push_back(id);
    }
  }
  return order;
}

int64_t LocalTimerModel::Advance(const std::vector<Event>* observed,
                                 int64_t cancel_in_run, bool at_run_start) {
  cancelled_in_run_ = false;
  if (closed_ || destroyed_) return 0;
  ++advances_;
  int64_t ran = 0;
  // The order is taken before the pass moves the ticks processed on.
  const std::vector<int64_t> order = RunOrder(observed);
  const __int128 ended =
      (static_cast<__int128>(now_) - start_) / config_.tick_nanos;
  ticks_ = std::max<int64_t>(
      ticks_, static_cast<int64_t>(std::min<__int128>(ended, INT64_MAX)));
  in_advance_ = true;
  bool stopped = false;
  for (int64_t id : order) {
    // A task that ran earlier in this advance() may have cancelled it.
    if (nodes_[id].state != State::kPending || nodes_[id].deferred) continue;
    ++ran;
    if (RunOnce(id, cancel_in_run, at_run_start)) {
      stopped = true;  // stop() from the task
      break;
    }
  }
  in_advance_ = false;
  for (Node& n : nodes_) n.deferred = false;  // filed once the walk is over
  // A task stopped the timer: what is pending is collected as this
  // advance() returns (so that sleeps end then), and the next stop()
  // returns it.
  if (stopped && !collected_) collected_by_advance_ = Stop();
  return ran;
}

bool LocalTimerModel::RunOnce(int64_t id, int64_t cancel_in_run,
                              bool at_run_start) {
  const bool periodic = nodes_[id].periodic;
  ++nodes_[id].runs;
  ++total_runs_;
  if (!periodic) {
    nodes_[id].state = State::kRan;
    --pending_;  // the slot is given back before the task runs
  }
  const int64_t a = advances_;
  runs_.push_back({nodes_[id].deadline, a, nodes_[id].order_free});
  events_.push_back({Event::Kind::kRan, id, a, now_, -1, 0});
  if (periodic && cancel_in_run == id && at_run_start) {
    cancelled_in_run_ = Cancel(id);  // another thread's, as the run starts
  }
  const TaskAction action = nodes_[id].action;
  if (action.repeat > 0) {
    Code code;
    const int64_t child =
        Schedule(false, action.child_delay, action.Child(), &code);
    events_.push_back({Event::Kind::kChildScheduled, id, a, now_, child,
                       static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = Cancel(id - 1);
    events_.push_back(
        {Event::Kind::kCancelledOther, id, a, now_, id - 1, ok ? 1 : 0});
  }
  if (action.cancel_all) {
    const int64_t count = CancelAll();  // its own periodic timeout too
    events_.push_back({Event::Kind::kCancelAllFromTask, id, a, now_, -1,
                       static_cast<int>(count)});
  }
  if (periodic && action.periodic_runs > 0 &&
      nodes_[id].runs == action.periodic_runs) {
    const bool ok = Cancel(id);
    events_.push_back(
        {Event::Kind::kCancelledSelf, id, a, now_, id, ok ? 1 : 0});
  }
  bool stopped_here = false;
  if (action.try_stop) {
    // From a task: the timer closes, the call returns nothing (result: the
    // number of timeouts it returned), and this advance() ends after it.
    closed_ = true;
    stopped_here = true;
    events_.push_back({Event::Kind::kStopFromTask, id, a, now_, -1, 0});
  }
  if (action.throw_after) ++throws_;
  Node& n = nodes_[id];
  if (periodic && n.state == State::kPending) {
    if (cancel_in_run == id && !at_run_start) {
      // Another thread's cancel(), right after this run.
      cancelled_in_run_ = Cancel(id);
    } else {
      // Its next run, filed once the walk is over: one run per advance().
      n.deadline = NextPeriodicRun(n.missed, n.deadline, n.period, now_);
      n.first_tick = ticks_;
      n.deferred = true;
      n.order_free = true;
    }
  } else if (periodic) {
    n.ended_in_run = true;  // its task goes when the run returns
  } else {
    n.captures_alive = false;  // destroyed after the run
  }
  return stopped_here;
}

std::vector<int64_t> LocalTimerModel::Stop() {
  std::vector<int64_t> result;
  closed_ = true;
  if (collected_) return std::exchange(collected_by_advance_, {});
  collected_ = true;
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

bool LocalTimerModel::TakeTask(int64_t id) {
  if (id < 0 || id >= next_id()) return false;
  Node& n = nodes_[id];
  if (n.state != State::kStopped) return false;
  n.state = State::kStoppedTaken;
  n.captures_alive = false;
  return true;
}

void LocalTimerModel::Destroy() {
  for (int64_t id : Stop()) TakeTask(id);
  destroyed_ = true;
}

bool LocalTimerModel::IsCancelled(int64_t id) const {
  switch (state(id)) {
    case State::kCancelled:
    case State::kStopped:
    case State::kStoppedTaken:
      return true;
    default:
      return false;
  }
}

bool LocalTimerModel::DeadlineKnown(int64_t id) const {
  return !(nodes_[id].periodic && nodes_[id].ended_in_run);
}

std::string LocalTimerModel::CheckContract() const {
  std::vector<int> runs(nodes_.size(), 0);
  size_t r = 0;
  const Run* last_fixed = nullptr;  // the last run in deadline order
  for (const Event& e : events_) {
    if (e.kind != Event::Kind::kRan) continue;
    const Node& n = nodes_[e.id];
    const Run& run = runs_[r];
    if (++runs[e.id] > 1 && !n.periodic) {
      return fmt::format("task {} ran twice", e.id);
    }
    if (e.clock < run.deadline) {
      return fmt::format("task {} ran early: clock {} deadline {}", e.id,
                         e.clock, run.deadline);
    }
    if (last_fixed != nullptr && last_fixed->advance == run.advance &&
        last_fixed->deadline > run.deadline && !run.order_free) {
      return fmt::format(
          "task {} (deadline {}) ran after deadline {} in one "
          "advance()",
          e.id, run.deadline, last_fixed->deadline);
    }
    if (!run.order_free) last_fixed = &run;
    if (n.parent_advance != 0 && run.advance <= n.parent_advance) {
      return fmt::format("task {} ran in advance() #{}, which scheduled it",
                         e.id, run.advance);
    }
    ++r;
  }
  int64_t pending = 0;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& n = nodes_[id];
    if (!n.periodic && (runs[id] == 1) != (n.state == State::kRan)) {
      return fmt::format("task {} state {} but ran {} times", id,
                         TimerModel::StateName(n.state), runs[id]);
    }
    if (n.periodic && runs[id] != n.runs) {
      return fmt::format("periodic task {} ran {} times, counted {}", id,
                         runs[id], n.runs);
    }
    if (n.state == State::kPending) ++pending;
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

std::string LocalTimerModel::Describe() const {
  std::string s = fmt::format(
      "model: start={} now={} (+{}) advances={} pending={} closed={} "
      "collected={} destroyed={}\n",
      start_, now_, static_cast<int64_t>(static_cast<__int128>(now_) - start_),
      advances_, pending_, closed_, collected_, destroyed_);
  for (int64_t id = 0; id < next_id(); ++id) {
    const Node& n = nodes_[id];
    if (n.state == State::kRejected) {
      s += fmt::format("  #{} rejected\n", id);
      continue;
    }
    const std::optional<int64_t> at = RunTime(n);
    s += fmt::format(
        "  #{} {}{} deadline={} run_time={} captures={} action={}{}{}\n", id,
        TimerModel::StateName(n.state), n.periodic ? " periodic" : "",
        n.deadline, at.has_value() ? fmt::format("{}", *at) : "never",
        n.captures_alive, n.action.ToString(),
        n.periodic ? fmt::format(" period={} {} runs={}", n.period,
                                 MissedName(n.missed), n.runs)
                   : "",
        n.order_free ? " order-free" : "");
  }
  return s;
}

}  // namespace tickwheel::model
