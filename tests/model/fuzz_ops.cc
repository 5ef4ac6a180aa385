#include "tests/model/fuzz_ops.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_compare.h"
#include "tests/model/fuzz_races.h"

namespace tickwheel::model {
namespace {

// now + delay as a clock reading, saturated at the ends of the int64 range.
int64_t ClockReadingAfter(int64_t now, absl::Duration delay) {
  return static_cast<int64_t>(std::clamp<__int128>(
      __int128{now} + absl::ToInt64Nanoseconds(delay), INT64_MIN, INT64_MAX));
}

// After newTimeout(), newTimeoutAt(), newPeriodic() or reset() of task `id`
// from the test thread, which had run `runs_before` times: lets the worker
// take the change in and, when the deadline had already passed, tells the
// model whether it ran at once: newly, or a worker asleep since before that
// deadline still had its tick to process (as it processes missed ticks).
void SettleAndResolve(FuzzContext& c, int64_t id, size_t runs_before) {
  c.real.Settle();  // the worker may have been woken
  if (id < c.model.next_id() && c.model.Overdue(id)) {
    const std::vector<int64_t> ticks = c.real.RunTicks(id);
    const bool ran = ticks.size() > runs_before;
    c.model.ResolveOverdue(id, ran, ran ? ticks.back() : -1);
    c.trace += fmt::format("     (overdue: {})\n",
                           ran ? "ran at once" : "due at the next tick");
  }
}

// The status codes of one scheduling call, real and model: "" when they
// agree.
std::string Mismatch(const char* what, int64_t id, Code real, Code model) {
  if (real == model) return "";
  return fmt::format("{} #{}: real {} model {}", what, id, CodeName(real),
                     CodeName(model));
}

std::string NewTimeout(FuzzContext& c, bool empty_task, absl::Duration delay,
                       const TaskAction& action) {
  Code real_code, model_code;
  const int64_t id = c.real.Schedule(empty_task, delay, action, &real_code);
  c.model.Schedule(empty_task, delay, action, &model_code);
  c.trace += fmt::format("  #{} newTimeout({}, {}{}) -> {}\n", id,
                         absl::FormatDuration(delay), action.ToString(),
                         empty_task ? ", empty task" : "", CodeName(real_code));
  if (std::string d = Mismatch("newTimeout", id, real_code, model_code);
      !d.empty()) {
    return d;
  }
  SettleAndResolve(c, id, 0);
  return "";
}

std::string Cancel(FuzzContext& c, int64_t id) {
  const bool r = c.real.Cancel(id);
  const bool m = c.model.Cancel(id);
  c.trace += fmt::format("  cancel(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("cancel(#{}): real {} model {}", id, r, m);
  return "";
}

void Advance(FuzzContext& c, int64_t nanos) {
  c.real.Advance(nanos);
  const std::vector<Event> observed = c.real.events();
  c.model.Advance(absl::Nanoseconds(nanos), &observed);
  c.trace += fmt::format("  advance({}ns) -> ticks={}\n", nanos,
                         c.model.ticks_processed());
}

std::string Stop(FuzzContext& c) {
  Code code;
  const std::vector<int64_t> r = c.real.Stop(&code);
  const std::vector<int64_t> m = c.model.Stop();
  c.trace += fmt::format("  stop() -> [{}]\n", fmt::join(r, ","));
  return CompareStop(c.model, code, r, m);
}

std::string TakeTask(FuzzContext& c, int64_t id) {
  const bool r = c.real.TakeTask(id);
  const bool m = c.model.TakeTask(id);
  c.trace += fmt::format("  takeTask(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("takeTask(#{}): real {} model {}", id, r, m);
  return "";
}

void Destroy(FuzzContext& c) {
  c.real.Destroy();
  c.model.Destroy();
  c.trace += "  ~Timer()\n";
}

std::string NewTimeoutAt(FuzzContext& c, Reader& in) {
  const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
  const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
  const int64_t at = ClockReadingAfter(c.model.now(), delay);
  Code real_code, model_code;
  const int64_t id = c.real.ScheduleAt(at, action, &real_code);
  c.model.ScheduleAt(at, action, &model_code);
  c.trace += fmt::format("  #{} newTimeoutAt({}, {}) -> {}\n", id, at,
                         action.ToString(), CodeName(real_code));
  if (std::string d = Mismatch("newTimeoutAt", id, real_code, model_code);
      !d.empty()) {
    return d;
  }
  SettleAndResolve(c, id, 0);
  return "";
}

std::string CancelAll(FuzzContext& c) {
  const int64_t r = c.real.CancelAll();
  const int64_t m = c.model.CancelAll();
  c.trace += fmt::format("  cancelAll() -> {}\n", r);
  if (r != m) return fmt::format("cancelAll(): real {} model {}", r, m);
  return "";
}

// reset(delay), or resetAt(now + delay) when `at`, on task `id`.
std::string Reset(FuzzContext& c, int64_t id, absl::Duration delay, bool at) {
  const size_t runs_before = c.real.RunTicks(id).size();
  bool r, m;
  if (at) {
    const int64_t when = ClockReadingAfter(c.model.now(), delay);
    r = c.real.ResetAt(id, when);
    m = c.model.ResetAt(id, when);
    c.trace += fmt::format("  resetAt(#{}, {}) -> {}\n", id, when, r);
  } else {
    r = c.real.Reset(id, delay);
    m = c.model.Reset(id, delay);
    c.trace += fmt::format("  reset(#{}, {}) -> {}\n", id,
                           absl::FormatDuration(delay), r);
  }
  if (r != m) return fmt::format("reset(#{}): real {} model {}", id, r, m);
  // An earlier deadline wakes the worker.
  if (r) SettleAndResolve(c, id, runs_before);
  return "";
}

std::string NewPeriodic(FuzzContext& c, Reader& in) {
  const absl::Duration initial = DecodeDelay(in.Byte(), c.tick, c.wheel);
  const absl::Duration period = DecodePeriod(in.Byte(), c.tick, c.wheel);
  const uint8_t flags = in.Byte();
  const TaskAction action = DecodePeriodicAction(flags);
  std::optional<Missed> missed;
  if (flags & kPeriodicPolicyFollows) missed = DecodeMissed(in.Byte());
  Code real_code, model_code;
  const int64_t id =
      c.real.SchedulePeriodic(initial, period, action, missed, &real_code);
  c.model.SchedulePeriodic(initial, period, action,
                           missed.value_or(Missed::kSkip), &model_code);
  c.trace += fmt::format(
      "  #{} newPeriodic({}, {}, {}{}) -> {}\n", id,
      absl::FormatDuration(initial), absl::FormatDuration(period),
      action.ToString(),
      missed.has_value() ? fmt::format(", {}", MissedName(*missed)) : "",
      CodeName(real_code));
  if (std::string d = Mismatch("newPeriodic", id, real_code, model_code);
      !d.empty()) {
    return d;
  }
  SettleAndResolve(c, id, 0);
  return "";
}

}  // namespace

bool ActsOnHandlesOnly(uint8_t opcode) {
  return opcode == 6 || opcode == 7 || opcode == 12;
}

std::string RunOp(uint8_t opcode, Reader& in, FuzzContext& c) {
  switch (opcode) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 13: {
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      return NewTimeout(c, opcode == 13, delay, action);
    }
    case 6:
    case 7:
    case 14:
      if (c.model.next_id() == 0) return "";
      return Cancel(c, opcode == 14 ? c.model.next_id() - 1
                                    : in.Byte() % c.model.next_id());
    case 8:
    case 9:
    case 10:
      Advance(c, c.TakeAdvance(in.Byte()));
      return "";
    case 11:
      return Stop(c);
    case 12:
      if (c.model.next_id() == 0) return "";
      return TakeTask(c, in.Byte() % c.model.next_id());
    default:  // 15
      Destroy(c);
      return "";
  }
}

std::string RunLaterOp(int kind, Reader& in, FuzzContext& c) {
  const bool needs_timer = kind == 0 || kind == 1 || kind == 4 || kind == 6;
  if (c.model.destroyed() && needs_timer) return "";  // only handles are left
  switch (kind) {
    case 0:
      return NewTimeoutAt(c, in);
    case 1:
      return CancelAll(c);
    case 2:
    case 3:
    case 7: {
      if (c.model.next_id() == 0) return "";
      const int64_t id =
          kind == 7 ? c.model.next_id() - 1 : in.Byte() % c.model.next_id();
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      return Reset(c, id, delay, kind == 3);
    }
    case 4:
      return NewPeriodic(c, in);
    case 5:
      return RunResetRace(in, c);
    default: {  // 6
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      action.cancel_all = true;
      return NewTimeout(c, false, delay, action);
    }
  }
}

}  // namespace tickwheel::model
