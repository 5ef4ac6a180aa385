#include "tests/model/fuzz_harness.h"

#include <array>
#include <atomic>
#include <climits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_ops.h"
#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {
namespace {

std::array<std::atomic<int64_t>, 2> ops_executed{};

int KindIndex(TimerKind kind) { return kind == TimerKind::kLocal ? 1 : 0; }

std::string CompareEvents(const TimerModel& model, RealSide& real) {
  const std::vector<Event> events = real.events();
  const std::vector<Event>& expected = model.events();
  for (size_t i = 0; i < std::max(events.size(), expected.size()); ++i) {
    const std::string r = i < events.size() ? events[i].ToString() : "(none)";
    const std::string m =
        i < expected.size() ? expected[i].ToString() : "(none)";
    if (r != m) return fmt::format("task event #{}: real {} model {}", i, r, m);
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
  const int64_t deadline = t.deadline().time_since_epoch().count();
  if (model.DeadlineKnown(id) && deadline != model.ClockDeadline(id)) {
    return fmt::format("task {}: deadline(): real {} model {}", id, deadline,
                       model.ClockDeadline(id));
  }
  return "";
}

// Everything observable: the number of attempts, every task event in order,
// pendingTimeouts(), metrics().expired, every task, and the task exceptions
// logged since `throws_before` (TaskThrowsLogged()).
std::string Compare(const TimerModel& model, RealSide& real,
                    int64_t throws_before) {
  if (real.next_id() != model.next_id()) {
    return fmt::format("attempt count: real {} model {}", real.next_id(),
                       model.next_id());
  }
  if (std::string d = CompareEvents(model, real); !d.empty()) return d;
  if (!model.destroyed()) {
    if (real.Pending() != model.Pending()) {
      return fmt::format("pendingTimeouts(): real {} model {}", real.Pending(),
                         model.Pending());
    }
    if (real.Expired() != model.total_runs()) {
      return fmt::format("metrics().expired: real {} model {}", real.Expired(),
                         model.total_runs());
    }
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

// A LocalTimer's nextWakeup() against the model's earliest run time, and
// pollTimeoutMs() against nextWakeup().
std::string CheckPlan(const TimerModel& model, RealSide& real) {
  if (model.destroyed()) return "";
  const std::optional<int64_t> wake = real.NextWakeup();
  const int poll = real.PollTimeoutMs();
  const int64_t now = real.NowNanos();
  const std::optional<int64_t> due = model.EarliestRunTime();
  auto show = [](std::optional<int64_t> t) {
    return t.has_value() ? fmt::format("{}", *t) : std::string("none");
  };
  if ((model.stopped() || model.Pending() == 0) && wake.has_value()) {
    return fmt::format("nextWakeup() {} with nothing to run", *wake);
  }
  if (due.has_value() && (!wake.has_value() || *wake > *due)) {
    return fmt::format("nextWakeup() {} later than the run time {}", show(wake),
                       *due);
  }
  int expected = -1;
  if (wake.has_value()) {
    const __int128 ms = (static_cast<__int128>(*wake) - now + 999999) / 1000000;
    expected =
        *wake <= now ? 0 : static_cast<int>(std::min<__int128>(ms, INT_MAX));
  }
  if (poll != expected) {
    return fmt::format("pollTimeoutMs() {} with nextWakeup() {} at {}: want {}",
                       poll, show(wake), now, expected);
  }
  return "";
}

// The end: stop, take every task back, destroy. Nothing may be left alive.
template <typename Check>
std::string Finish(FuzzContext& c, const Check& check) {
  if (!c.model.destroyed()) {
    Code code;
    const std::vector<int64_t> r = c.real.Stop(&code);
    const std::vector<int64_t> m = c.model.Stop();
    c.trace += fmt::format("  final stop() -> [{}]\n", fmt::join(r, ","));
    if (std::string d = CompareStop(c.model, code, r, m); !d.empty()) return d;
    for (int64_t id : r) {
      if (id < 0 || c.real.TakeTask(id) != c.model.TakeTask(id)) {
        return fmt::format("takeTask(#{}) after the final stop()", id);
      }
    }
    c.real.Destroy();
    c.model.Destroy();
  }
  if (std::string d = check(); !d.empty()) return d;
  c.real.DropHandles();
  for (int64_t id = 0; id < c.model.next_id(); ++id) {
    if (c.real.alive(id) != 0) {
      return fmt::format("task {}: captures still alive at the end", id);
    }
  }
  return "";
}

}  // namespace

int64_t FuzzOpsExecuted(TimerKind kind) {
  return ops_executed[KindIndex(kind)].load();
}

std::string RunFuzzInput(TimerKind kind, const uint8_t* data, size_t size) {
  InstallLogSinkOnce();
  Reader in(data, size);
  const FuzzConfig config = DecodeConfig(in, kind);
  RealSide real(config);
  if (!real.create_status().ok()) {
    return fmt::format("Create failed for a valid config {}: {}",
                       config.ToString(), real.create_status().ToString());
  }
  TimerModel model({.kind = kind,
                    .tick_nanos = config.tick_nanos,
                    .zero_slack = config.zero_slack,
                    .max_pending = config.max_pending,
                    .clock_start = config.clock_start});
  FuzzContext c(real, model, config);
  const int64_t throws_before = TaskThrowsLogged();
  auto check = [&]() -> std::string {
    std::string diff = Compare(model, real, throws_before);
    if (diff.empty()) diff = model.CheckContract();
    return diff;
  };
  std::string diff;
  for (int op = 0; op < kMaxOps && !in.empty() && diff.empty(); ++op) {
    const uint8_t raw = in.Byte();
    ops_executed[KindIndex(kind)].fetch_add(1, std::memory_order_relaxed);
    diff = c.local ? RunLocalOp(raw & 15, in, c) : RunTimerOp(raw, in, c);
    if (diff.empty()) diff = check();
    if (diff.empty() && c.local && LocalChecksPlanAfter(raw & 15)) {
      diff = CheckPlan(model, real);
    }
  }
  if (diff.empty()) diff = Finish(c, check);
  if (diff.empty()) return "";
  return fmt::format("MISMATCH: {}\nconfig: {}\noperations:\n{}{}", diff,
                     config.ToString(), c.trace, model.Describe());
}

}  // namespace tickwheel::model
