#include "tests/model/local_fuzz_ops.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

namespace tickwheel::model {
namespace {

// now + delay as a clock reading, saturated at the ends of the int64 range.
int64_t ClockReadingAfter(int64_t now, absl::Duration delay) {
  return static_cast<int64_t>(std::clamp<__int128>(
      __int128{now} + absl::ToInt64Nanoseconds(delay), INT64_MIN, INT64_MAX));
}

// A deadline (a clock reading) as the fuzzer schedules it: one further than
// kFarDeadline from startTime never comes, unless kFuzzLocalEndOfRange.
int64_t InRange(const LocalFuzzContext& c, int64_t at) {
  if (kFuzzLocalEndOfRange || at == INT64_MAX) return at;
  return __int128{at} - c.start > kFarDeadline ? INT64_MAX : at;
}
absl::Duration InRange(const LocalFuzzContext& c, absl::Duration delay) {
  const int64_t at =
      ClockReadingAfter(c.model.now(), absl::Ceil(delay, absl::Nanoseconds(1)));
  if (kFuzzLocalEndOfRange || InRange(c, at) == at) return delay;
  return absl::InfiniteDuration();
}

std::string Mismatch(const char* what, int64_t id, Code real, Code model) {
  if (real == model) return "";
  return fmt::format("{} #{}: real {} model {}", what, id, CodeName(real),
                     CodeName(model));
}

std::string NewTimeout(LocalFuzzContext& c, bool empty_task,
                       absl::Duration delay, const TaskAction& action) {
  delay = InRange(c, delay);
  Code real_code, model_code;
  const int64_t id = c.real.Schedule(empty_task, delay, action, &real_code);
  c.model.Schedule(empty_task, delay, action, &model_code);
  c.trace += fmt::format("  #{} newTimeout({}, {}{}) -> {}\n", id,
                         absl::FormatDuration(delay), action.ToString(),
                         empty_task ? ", empty task" : "", CodeName(real_code));
  return Mismatch("newTimeout", id, real_code, model_code);
}

std::string NewTimeoutAt(LocalFuzzContext& c, Reader& in) {
  const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
  const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
  const int64_t at = InRange(c, ClockReadingAfter(c.model.now(), delay));
  Code real_code, model_code;
  const int64_t id = c.real.ScheduleAt(at, action, &real_code);
  c.model.ScheduleAt(at, action, &model_code);
  c.trace += fmt::format("  #{} newTimeoutAt({}, {}) -> {}\n", id, at,
                         action.ToString(), CodeName(real_code));
  return Mismatch("newTimeoutAt", id, real_code, model_code);
}

std::string NewPeriodic(LocalFuzzContext& c, Reader& in) {
  const absl::Duration initial =
      InRange(c, DecodeDelay(in.Byte(), c.tick, c.wheel));
  const absl::Duration period = DecodePeriod(in.Byte(), c.tick, c.wheel);
  const uint8_t flags = in.Byte();
  const TaskAction action = DecodePeriodicAction(flags);
  Missed missed = Missed::kSkip;
  if (flags & kPeriodicPolicyFollows) missed = DecodeMissed(in.Byte());
  missed = LocalPolicy(missed);
  Code real_code, model_code;
  const int64_t id =
      c.real.SchedulePeriodic(initial, period, action, missed, &real_code);
  c.model.SchedulePeriodic(initial, period, action, missed, &model_code);
  c.trace +=
      fmt::format("  #{} newPeriodic({}, {}, {}, {}) -> {}\n", id,
                  absl::FormatDuration(initial), absl::FormatDuration(period),
                  action.ToString(), MissedName(missed), CodeName(real_code));
  return Mismatch("newPeriodic", id, real_code, model_code);
}

std::string Cancel(LocalFuzzContext& c, int64_t id) {
  const bool r = c.real.Cancel(id);
  const bool m = c.model.Cancel(id);
  c.trace += fmt::format("  cancel(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("cancel(#{}): real {} model {}", id, r, m);
  return "";
}

// advance() on both sides, with the clock where it is.
std::string Advance(LocalFuzzContext& c) {
  const int64_t r = c.real.Advance();
  const std::vector<Event> observed = c.real.events();
  const int64_t m = c.model.Advance(&observed);
  c.trace += fmt::format("  advance() at {} -> {}\n", c.model.now(), r);
  if (r != m) return fmt::format("advance(): real {} runs, model {}", r, m);
  return "";
}

void MoveClock(LocalFuzzContext& c, int64_t nanos) {
  c.real.AdvanceClock(nanos);
  c.model.AdvanceClock(nanos);
  c.trace += fmt::format("  clock +{}ns\n", nanos);
}

// Opcode 9: the loop of an event loop with nothing else to do.
std::string FollowPlan(LocalFuzzContext& c) {
  std::optional<int64_t> last;
  for (int step = 0; step < kMaxPlanSteps; ++step) {
    const std::optional<int64_t> wake = c.real.NextWakeup();
    const std::optional<int64_t> due = c.model.EarliestRunTime();
    c.trace += fmt::format("  nextWakeup() -> {}\n",
                           wake ? fmt::format("{}", *wake) : "none");
    if (!wake.has_value()) return "";  // CheckPlan() compares with the model
    if (due.has_value() && *wake > *due) {
      return fmt::format("nextWakeup() {} later than the run time {}", *wake,
                         *due);
    }
    // Only deadlines that never come: the plan may wake for them as they
    // move down the wheel's levels, which takes the clock toward the end
    // of its range (kFuzzLocalEndOfRange).
    if (!due.has_value() && !kFuzzLocalEndOfRange) return "";
    if (last.has_value() && *wake <= *last) {
      return fmt::format(
          "advance() at nextWakeup() {} ran nothing and the plan stayed at {}",
          *last, *wake);
    }
    if (*wake > c.real.NowNanos()) MoveClock(c, *wake - c.real.NowNanos());
    const int64_t before = c.model.total_runs();
    if (std::string d = Advance(c); !d.empty()) return d;
    if (c.model.total_runs() > before || c.model.closed()) return "";
    last = wake;
  }
  // With only deadlines that never come pending, the plan may wake for them
  // as they move down the wheel's levels, as long as it moves on.
  if (!c.model.EarliestRunTime().has_value()) return "";
  return fmt::format("{} wakes at nextWakeup() ran nothing", kMaxPlanSteps);
}

std::string Reset(LocalFuzzContext& c, int64_t id, absl::Duration delay,
                  bool at) {
  bool r, m;
  delay = InRange(c, delay);
  if (at) {
    const int64_t when = InRange(c, ClockReadingAfter(c.model.now(), delay));
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
  return "";
}

std::string Stop(LocalFuzzContext& c) {
  const std::vector<int64_t> r = c.real.Stop();
  const std::vector<int64_t> m = c.model.Stop();
  c.trace += fmt::format("  stop() -> [{}]\n", fmt::join(r, ","));
  return CompareLocalStop(c.model, r, m);
}

std::string TakeTask(LocalFuzzContext& c, int64_t id) {
  const bool r = c.real.TakeTask(id);
  const bool m = c.model.TakeTask(id);
  c.trace += fmt::format("  takeTask(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("takeTask(#{}): real {} model {}", id, r, m);
  return "";
}

}  // namespace

std::string CompareLocalStop(const LocalTimerModel& model,
                             const std::vector<int64_t>& real_ids,
                             const std::vector<int64_t>& model_ids) {
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

bool LocalActsOnHandlesOnly(uint8_t opcode) {
  return opcode == 5 || opcode == 6 || (opcode >= 11 && opcode <= 14);
}

bool LocalChecksPlanAfter(uint8_t opcode) {
  return opcode != 5 && opcode != 6 && opcode != 14;
}

std::string RunLocalOp(uint8_t opcode, Reader& in, LocalFuzzContext& c) {
  const int64_t n = c.model.next_id();
  switch (opcode) {
    case 0:
    case 1:
    case 2: {
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      return NewTimeout(c, false, delay, action);
    }
    case 3:
      return NewTimeoutAt(c, in);
    case 4:
      return NewPeriodic(c, in);
    case 5:
    case 6:
      if (n == 0) return "";
      return Cancel(c, opcode == 6 ? n - 1 : in.Byte() % n);
    case 7:
    case 8:
      MoveClock(c, c.TakeAdvance(in.Byte()));
      return Advance(c);
    case 9:
      return FollowPlan(c);
    case 10:
      return Stop(c);
    case 11:
      if (n == 0) return "";
      return TakeTask(c, in.Byte() % n);
    case 12:
    case 13: {
      if (n == 0) return "";
      const int64_t id = in.Byte() % n;
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      return Reset(c, id, delay, opcode == 13);
    }
    case 14:
      return RunLocalRace(in, c);
    default:
      break;
  }
  // 15: the less frequent calls.
  const int kind = in.Byte() % 6;
  switch (kind) {
    case 0: {
      const int64_t r = c.real.CancelAll();
      const int64_t m = c.model.CancelAll();
      c.trace += fmt::format("  cancelAll() -> {}\n", r);
      if (r != m) return fmt::format("cancelAll(): real {} model {}", r, m);
      return "";
    }
    case 1:
    case 2: {
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      action.cancel_all = kind == 1;
      return NewTimeout(c, kind == 2, delay, action);
    }
    case 3:
      return Advance(c);
    case 4:
      c.real.Destroy();
      c.model.Destroy();
      c.trace += "  ~LocalTimer()\n";
      return "";
    default: {  // 5
      if (n == 0) return "";
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      return Reset(c, n - 1, delay, false);
    }
  }
}

}  // namespace tickwheel::model
