#include "tests/model/fuzz_compare.h"

#include <algorithm>

#include <fmt/format.h>

namespace tickwheel::model {
namespace {

std::string CompareEvents(const TimerModel& model, RealSide& real) {
  const std::vector<Event> events = real.events();
  const std::vector<Event>& expected = model.events();
  for (size_t i = 0; i < std::max(events.size(), expected.size()); ++i) {
    const std::string r = i < events.size() ? events[i].ToString() : "(none)";
    const std::string m =
        i < expected.size() ? expected[i].ToString() : "(none)";
    if (r != m) {
      return fmt::format("task event #{}: real {} model {}", i, r, m);
    }
  }
  return "";
}

// Task `id`'s captures and what its handle reads.
std::string CompareTask(const TimerModel& model, RealSide& real, int64_t id) {
  const int alive = real.alive(id);
  if (alive < 0 || alive > 1) {
    return fmt::format("task {}: {} live captures (destroyed twice?)", id,
                       alive);
  }
  if ((alive == 1) != model.CapturesAlive(id)) {
    return fmt::format("task {}: captures alive: real {} model {}", id,
                       alive == 1, model.CapturesAlive(id));
  }
  const Timeout t = real.Handle(id);
  if (t.isExpired() != model.IsExpired(id) ||
      t.isCancelled() != model.IsCancelled(id)) {
    return fmt::format("task {}: isExpired/isCancelled: real {}/{} model {}/{}",
                       id, t.isExpired(), t.isCancelled(), model.IsExpired(id),
                       model.IsCancelled(id));
  }
  if (model.state(id) == TimerModel::State::kRejected) return "";
  if (t.isPeriodic() != model.IsPeriodic(id)) {
    return fmt::format("task {}: isPeriodic: real {} model {}", id,
                       t.isPeriodic(), model.IsPeriodic(id));
  }
  // A periodic timeout cancelled during its own run keeps that run's
  // deadline or the next one's, depending on the task executor.
  const bool deadline_known =
      !model.IsPeriodic(id) || model.state(id) != TimerModel::State::kCancelled;
  const int64_t deadline = t.deadline().time_since_epoch().count();
  if (deadline_known && deadline != model.ClockDeadline(id)) {
    return fmt::format("task {}: deadline(): real {} model {}", id, deadline,
                       model.ClockDeadline(id));
  }
  return "";
}

}  // namespace

std::string Compare(const TimerModel& model, RealSide& real,
                    int64_t throws_before) {
  if (real.next_id() != model.next_id()) {
    return fmt::format("attempt count: real {} model {}", real.next_id(),
                       model.next_id());
  }
  if (std::string d = CompareEvents(model, real); !d.empty()) return d;
  if (!model.destroyed() && real.Pending() != model.Pending()) {
    return fmt::format("pendingTimeouts(): real {} model {}", real.Pending(),
                       model.Pending());
  }
  for (int64_t id = 0; id < model.next_id(); ++id) {
    if (std::string d = CompareTask(model, real, id); !d.empty()) return d;
  }
  const int64_t throws = TaskThrowsLogged() - throws_before;
  if (throws != model.throws()) {
    return fmt::format("task exceptions logged: real {} model {}", throws,
                       model.throws());
  }
  return "";
}

std::string CompareStop(const TimerModel& model, Code code,
                        const std::vector<int64_t>& real_ids,
                        const std::vector<int64_t>& model_ids) {
  if (code != Code::kOk) {
    return fmt::format("stop(): {} from the test thread", CodeName(code));
  }
  std::vector<int64_t> a = real_ids, b = model_ids;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) {
    return fmt::format("stop() returned ids [{}], model [{}]",
                       fmt::join(real_ids, ","), fmt::join(model_ids, ","));
  }
  for (size_t i = 1; i < real_ids.size(); ++i) {
    if (model.ClockDeadline(real_ids[i - 1]) >
        model.ClockDeadline(real_ids[i])) {
      return fmt::format("stop() not in deadline order: [{}]",
                         fmt::join(real_ids, ","));
    }
  }
  return "";
}

}  // namespace tickwheel::model
