// The passes of TimerModel (tests/model/timer_model.h), one per timer type:
// what a Timer's worker does when the clock has moved (ThreadedPass()), and
// what a LocalTimer's advance() does (LocalPass()); and the contract checks,
// those both share and those that differ between the two.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tests/model/timer_model.h"

namespace tickwheel::model {

std::string TimerModel::CheckContract() const {
  std::vector<int> runs(nodes_.size(), 0);
  size_t r = 0;
  for (const Event& e : events_) {
    if (e.kind != Event::Kind::kRan) continue;
    if (++runs[e.id] > 1 && !nodes_[e.id].periodic) {
      return fmt::format("task {} ran twice", e.id);
    }
    if (e.clock < runs_[r].deadline) {
      return fmt::format("task {} ran early: clock {} deadline {}", e.id,
                         e.clock, runs_[r].deadline);
    }
    ++r;
  }
  if (std::string d = local() ? CheckLocalContract() : CheckThreadedContract();
      !d.empty()) {
    return d;
  }
  int64_t pending = 0;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& n = nodes_[id];
    if (n.periodic) {
      if (runs[id] != n.runs) {
        return fmt::format("periodic task {} ran {} times, counted {}", id,
                           runs[id], n.runs);
      }
    } else if ((runs[id] == 1) != (n.state == State::kRan)) {
      return fmt::format("task {} state {} but ran {} times", id,
                         StateName(n.state), runs[id]);
    }
    if (n.state == State::kPending) {
      ++pending;
      if (collected_) return fmt::format("task {} pending after stop()", id);
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

// ---- kThreaded: a Timer's worker. ----

bool TimerModel::Overdue(int64_t id) const {
  const Node& n = nodes_[id];
  return !local() && n.state == State::kPending && n.first_tick == ticks_ &&
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
  in_pass_ = true;
  pass_end_ = ticks_;
  RunNode(id, tick, plausible ? observed_tick : tick);
  in_pass_ = false;
  for (Node& n : nodes_) n.deferred = false;
}

void TimerModel::RunNode(int64_t id, int64_t tick, int64_t reported_tick) {
  nodes_[id].ran_tick = tick;
  while (RunOnce(id, reported_tick, -1, false)) {
  }
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

int64_t TimerModel::ThreadedPass(const std::vector<Event>* observed) {
  if (!started_ || closed_) return 0;
  const int64_t pass_end = static_cast<int64_t>(
      (static_cast<__int128>(now_) - start_) / config_.tick_nanos);
  if (pass_end <= ticks_) return 0;
  ++advances_;
  const int64_t runs_before = total_runs_;
  in_pass_ = true;
  pass_end_ = pass_end;
  // One pass over every tick that has ended, in order; in each tick, what is
  // due runs in acceptance order. Children get first_tick = pass_end, so the
  // loop never runs them in this pass.
  for (int64_t tick = ticks_;;) {
    int64_t next = pass_end;  // the next tick with work, skipping empty ones
    for (const Node& n : nodes_) {
      if (n.state == State::kPending && !n.held && DueTick(n) >= tick) {
        next = std::min(next, DueTick(n));
      }
    }
    if (next >= pass_end) break;
    std::vector<int64_t> due;
    for (int64_t id = 0; id < next_id(); ++id) {
      if (nodes_[id].state == State::kPending && !nodes_[id].held &&
          DueTick(nodes_[id]) == next) {
        due.push_back(id);
      }
    }
    for (int64_t id : OrderWithinTick(due, next, observed)) {
      // A task run earlier in this tick may have cancelled it.
      if (nodes_[id].state == State::kPending && DueTick(nodes_[id]) == next) {
        RunNode(id, next, next);
      }
    }
    tick = next + 1;
  }
  in_pass_ = false;
  ticks_ = pass_end;
  // The worker has now processed the ticks where moved timeouts were filed,
  // and filed them again by their new deadlines.
  for (Node& n : nodes_) {
    if (n.state == State::kPending && !n.held && n.moved_later &&
        n.filed_tick < pass_end) {
      n.moved_later = false;
      n.filed_tick = DueTick(n);
    }
  }
  return total_runs_ - runs_before;
}

int64_t TimerModel::AdvanceHoldingBack(absl::Duration d, int64_t taken_back,
                                       const std::vector<Event>* observed) {
  AdvanceClock(absl::ToInt64Nanoseconds(d));
  std::vector<int64_t> held;
  // A task's timeouts go to the worker thread's own lane, which the worker
  // drains before it sleeps: never there to take back, and never behind the
  // cell of one that is.
  const bool in_lane =
      taken_back >= 0 && taken_back < next_id() && !nodes_[taken_back].by_task;
  for (int64_t id = taken_back + 1; in_lane && id < next_id(); ++id) {
    Node& n = nodes_[id];
    if (n.state == State::kPending && !n.by_task) {
      n.held = true;
      held.push_back(id);
    }
  }
  const int64_t runs_before = total_runs_;
  const int64_t ticks_before = ticks_;
  Advance(observed);
  // The next pass: the same clock reading, the wheel at ticks_. With no
  // tick ended, the first pass processed nothing they could have missed.
  for (int64_t id : held) {
    Node& n = nodes_[id];
    n.held = false;
    // A task of the first pass may have cancelled it meanwhile.
    if (n.state != State::kPending || ticks_ == ticks_before) continue;
    const int64_t due = RawDueTick(n);
    if (n.clock_deadline >= now_ || due >= ticks_) {
      // Filed by its deadline, into the current tick if its own has ended.
      n.first_tick = ticks_;
      n.filed_tick = DueTick(n);
      n.moved_later = false;
      continue;
    }
    int64_t reported = due;
    if (observed != nullptr && events_.size() < observed->size()) {
      const Event& e = (*observed)[events_.size()];
      if (e.kind == Event::Kind::kRan && e.id == id && e.tick == ticks_) {
        reported = ticks_;
      }
    }
    n.ran_overdue = true;
    in_pass_ = true;
    pass_end_ = ticks_;
    RunNode(id, due, reported);
    in_pass_ = false;
    for (Node& m : nodes_) m.deferred = false;
  }
  return total_runs_ - runs_before;
}

std::string TimerModel::CheckThreadedContract() const {
  int64_t last_tick = -1;
  for (const Event& e : events_) {
    if (e.kind != Event::Kind::kRan) continue;
    const Node& n = nodes_[e.id];
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
  for (int64_t id = 0; id < next_id(); ++id) {
    const Node& n = nodes_[id];
    if (n.state == State::kPending && DueTick(n) < ticks_) {
      return fmt::format("task {} still pending after its tick {}", id,
                         DueTick(n));
    }
  }
  return "";
}

// ---- kLocal: a LocalTimer's advance(). ----

std::optional<int64_t> TimerModel::RunTime(const Node& n) const {
  if (n.clock_deadline == INT64_MAX) return std::nullopt;
  if (config_.zero_slack) return n.clock_deadline;
  // The end of the tick the deadline falls in, counted from startTime in
  // int64 nanoseconds (the distance saturates, as the wheel counts it); a
  // tick end past that range, or past the clock's, never comes.
  const __int128 end =
      (static_cast<__int128>(DueTick(n)) + 1) * config_.tick_nanos;
  if (end > INT64_MAX || start_ + end > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(start_ + end);
}

bool TimerModel::Due(const Node& n) const {
  if (n.state != State::kPending || n.deferred) return false;
  const std::optional<int64_t> at = RunTime(n);
  return at.has_value() && *at <= now_;
}

std::optional<int64_t> TimerModel::EarliestRunTime() const {
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

std::vector<int64_t> TimerModel::RunOrder(
    const std::vector<Event>* observed) const {
  std::vector<int64_t> due;
  for (int64_t id = 0; id < next_id(); ++id) {
    if (Due(nodes_[id])) due.push_back(id);
  }
  auto by_deadline = [&](int64_t a, int64_t b) {
    const Node &x = nodes_[a], &y = nodes_[b];
    return x.clock_deadline != y.clock_deadline
               ? x.clock_deadline < y.clock_deadline
               : a < b;
  };
  std::sort(due.begin(), due.end(), by_deadline);
  if (observed == nullptr) return due;
  // The real advance()'s runs, from where the two event lists part (they
  // agree up to here, or the comparison reports it anyway).
  std::vector<int64_t> order;
  for (size_t i = events_.size(); i < observed->size(); ++i) {
    const Event& e = (*observed)[i];
    if (e.kind == Event::Kind::kRan && e.tick == advances_ &&
        std::find(due.begin(), due.end(), e.id) != due.end() &&
        std::find(order.begin(), order.end(), e.id) == order.end()) {
      order.push_back(e.id);
    }
  }
  // Reset and periodic timeouts may run anywhere among the rest: the real
  // order, if the others keep deadline order in it.
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

int64_t TimerModel::LocalPass(const std::vector<Event>* observed,
                              int64_t cancel_in_run, bool at_run_start) {
  if (closed_ || destroyed_) return 0;
  ++advances_;
  // The order is taken before the pass moves the ticks processed on.
  const std::vector<int64_t> order = RunOrder(observed);
  const __int128 ended =
      (static_cast<__int128>(now_) - start_) / config_.tick_nanos;
  ticks_ = std::max<int64_t>(
      ticks_, static_cast<int64_t>(std::min<__int128>(ended, INT64_MAX)));
  in_pass_ = true;
  pass_end_ = ticks_;
  int64_t ran = 0;
  bool stopped = false;
  for (int64_t id : order) {
    // A task that ran earlier in this advance() may have cancelled it.
    if (nodes_[id].state != State::kPending || nodes_[id].deferred) continue;
    ++ran;
    if (RunOnce(id, advances_, cancel_in_run, at_run_start)) {
      stopped = true;  // stop() from the task
      break;
    }
  }
  in_pass_ = false;
  // A task stopped the timer: what is pending is collected as this
  // advance() returns (so that sleeps end then), and the next stop()
  // returns it.
  if (stopped && !collected_) collected_by_advance_ = Stop();
  return ran;
}

std::string TimerModel::CheckLocalContract() const {
  size_t r = 0;
  const Run* last_fixed = nullptr;  // the last run in deadline order
  for (const Event& e : events_) {
    if (e.kind != Event::Kind::kRan) continue;
    const Node& n = nodes_[e.id];
    const Run& run = runs_[r++];
    if (last_fixed != nullptr && last_fixed->advance == run.advance &&
        last_fixed->deadline > run.deadline && !run.order_free) {
      return fmt::format(
          "task {} (deadline {}) ran after deadline {} in one advance()", e.id,
          run.deadline, last_fixed->deadline);
    }
    if (!run.order_free) last_fixed = &run;
    if (n.parent_advance != 0 && run.advance <= n.parent_advance) {
      return fmt::format("task {} ran in advance() #{}, which scheduled it",
                         e.id, run.advance);
    }
  }
  return "";
}

}  // namespace tickwheel::model
