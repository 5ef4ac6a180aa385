#include "tests/model/fuzz_ops.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_races.h"

namespace tickwheel::model {
namespace {

// now + delay as a clock reading, saturated at the ends of the int64 range.
int64_t ClockReadingAfter(int64_t now, absl::Duration delay) {
  return static_cast<int64_t>(std::clamp<__int128>(
      __int128{now} + absl::ToInt64Nanoseconds(delay), INT64_MIN, INT64_MAX));
}

// A deadline (a clock reading) as a LocalTimer is given it: one further than
// kFarDeadline from startTime never comes, unless kFuzzLocalEndOfRange. A
// Timer takes every deadline as decoded.
int64_t InRange(const FuzzContext& c, int64_t at) {
  if (!c.local || kFuzzLocalEndOfRange || at == INT64_MAX) return at;
  return __int128{at} - c.start > kFarDeadline ? INT64_MAX : at;
}
absl::Duration InRange(const FuzzContext& c, absl::Duration delay) {
  const int64_t at =
      ClockReadingAfter(c.model.now(), absl::Ceil(delay, absl::Nanoseconds(1)));
  if (InRange(c, at) == at) return delay;
  return absl::InfiniteDuration();
}

// After newTimeout(), newTimeoutAt(), newPeriodic() or reset() of task `id`
// from the test thread, which had run `runs_before` times: lets a Timer's
// worker take the change in and, when the deadline had already passed, tells
// the model whether it ran at once: newly, or a worker asleep since before
// that deadline still had its tick to process (as it processes missed ticks).
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
// agree, else the difference; settles a Timer when they agree.
std::string Scheduled(FuzzContext& c, const char* what, int64_t id, Code real,
                      Code model) {
  if (real != model) {
    return fmt::format("{} #{}: real {} model {}", what, id, CodeName(real),
                       CodeName(model));
  }
  SettleAndResolve(c, id, 0);
  return "";
}

std::string NewTimeoutAt(FuzzContext& c, Reader& in) {
  const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
  const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
  const int64_t at = InRange(c, ClockReadingAfter(c.model.now(), delay));
  Code real_code, model_code;
  const int64_t id = c.real.ScheduleAt(at, action, &real_code);
  c.model.ScheduleAt(at, action, &model_code);
  c.trace += fmt::format("  #{} newTimeoutAt({}, {}) -> {}\n", id, at,
                         action.ToString(), CodeName(real_code));
  return Scheduled(c, "newTimeoutAt", id, real_code, model_code);
}

std::string NewPeriodic(FuzzContext& c, Reader& in) {
  const absl::Duration initial =
      InRange(c, DecodeDelay(in.Byte(), c.tick, c.wheel));
  const absl::Duration period = DecodePeriod(in.Byte(), c.tick, c.wheel);
  const uint8_t flags = in.Byte();
  const TaskAction action = DecodePeriodicAction(flags);
  std::optional<Missed> missed;
  if (flags & kPeriodicPolicyFollows) missed = DecodeMissed(in.Byte());
  if (c.local) {  // it always gets a policy, the decoded one if switched on
    missed =
        kFuzzLocalMissedRuns ? missed.value_or(Missed::kSkip) : Missed::kSkip;
  }
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
  return Scheduled(c, "newPeriodic", id, real_code, model_code);
}

std::string TakeTask(FuzzContext& c, int64_t id) {
  const bool r = c.real.TakeTask(id);
  const bool m = c.model.TakeTask(id);
  c.trace += fmt::format("  takeTask(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("takeTask(#{}): real {} model {}", id, r, m);
  return "";
}

// reset(delay), or resetAt(now + delay) when `at`, on task `id`.
std::string Reset(FuzzContext& c, int64_t id, absl::Duration delay, bool at) {
  const size_t runs_before = c.real.RunTicks(id).size();
  delay = InRange(c, delay);
  bool r, m;
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
  // An earlier deadline wakes a Timer's worker.
  if (r) SettleAndResolve(c, id, runs_before);
  return "";
}

// LocalTimer opcode 9: the loop of an event loop with nothing else to do.
std::string FollowPlan(FuzzContext& c) {
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
    const int64_t before = c.model.total_runs();
    if (std::string d =
            Advance(c, std::max<int64_t>(0, *wake - c.real.NowNanos()));
        !d.empty()) {
      return d;
    }
    if (c.model.total_runs() > before || c.model.stopped()) return "";
    last = wake;
  }
  // With only deadlines that never come pending, the plan may wake for them
  // as they move down the wheel's levels, as long as it moves on.
  if (!c.model.EarliestRunTime().has_value()) return "";
  return fmt::format("{} wakes at nextWakeup() ran nothing", kMaxPlanSteps);
}

// The timeout a [timeout] byte picks (-1: none yet, and no byte read).
int64_t PickTimeout(Reader& in, const FuzzContext& c) {
  const int64_t n = c.model.next_id();
  return n == 0 ? -1 : in.Byte() % n;
}

std::string NewTimeoutFromInput(Reader& in, FuzzContext& c, bool empty_task,
                                bool cancel_all) {
  const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
  TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
  action.cancel_all = cancel_all;
  return NewTimeout(c, empty_task, delay, action);
}

std::string ResetFromInput(Reader& in, FuzzContext& c, bool newest, bool at) {
  const int64_t id = newest ? c.model.next_id() - 1 : PickTimeout(in, c);
  if (id < 0) return "";
  return Reset(c, id, DecodeDelay(in.Byte(), c.tick, c.wheel), at);
}

}  // namespace

std::string NewTimeout(FuzzContext& c, bool empty_task, absl::Duration delay,
                       const TaskAction& action) {
  delay = InRange(c, delay);
  Code real_code, model_code;
  const int64_t id = c.real.Schedule(empty_task, delay, action, &real_code);
  c.model.Schedule(empty_task, delay, action, &model_code);
  c.trace += fmt::format("  #{} newTimeout({}, {}{}) -> {}\n", id,
                         absl::FormatDuration(delay), action.ToString(),
                         empty_task ? ", empty task" : "", CodeName(real_code));
  return Scheduled(c, "newTimeout", id, real_code, model_code);
}

std::string Cancel(FuzzContext& c, int64_t id) {
  if (id < 0) return "";
  const bool r = c.real.Cancel(id);
  const bool m = c.model.Cancel(id);
  c.trace += fmt::format("  cancel(#{}) -> {}\n", id, r);
  if (r != m) return fmt::format("cancel(#{}): real {} model {}", id, r, m);
  return "";
}

std::string CancelAll(FuzzContext& c) {
  const int64_t r = c.real.CancelAll();
  const int64_t m = c.model.CancelAll();
  c.trace += fmt::format("  cancelAll() -> {}\n", r);
  if (r != m) return fmt::format("cancelAll(): real {} model {}", r, m);
  return "";
}

std::string Advance(FuzzContext& c, int64_t nanos) {
  const int64_t r = c.real.Advance(nanos);
  const std::vector<Event> observed = c.real.events();
  const int64_t m = c.model.Advance(absl::Nanoseconds(nanos), &observed);
  c.trace += fmt::format("  advance({}ns) to {} -> {} runs, ticks={}\n", nanos,
                         c.model.now(), r, c.model.ticks_processed());
  if (r != m) return fmt::format("advance(): real {} runs, model {}", r, m);
  return "";
}

std::string Stop(FuzzContext& c) {
  Code code;
  const std::vector<int64_t> r = c.real.Stop(&code);
  const std::vector<int64_t> m = c.model.Stop();
  c.trace += fmt::format("  stop() -> [{}]\n", fmt::join(r, ","));
  return CompareStop(c.model, code, r, m);
}

void Destroy(FuzzContext& c) {
  c.real.Destroy();
  c.model.Destroy();
  c.trace += c.local ? "  ~LocalTimer()\n" : "  ~Timer()\n";
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

std::string RunTimerOp(uint8_t raw, Reader& in, FuzzContext& c) {
  const bool gone = c.model.destroyed();  // only handles are left
  if (raw >= 0xF0 && raw < 0xF8) return RunTimerRace(raw & 7, in, c);
  if (raw >= 0xF8) {
    const int kind = raw & 7;
    if (gone && (kind == 0 || kind == 1 || kind == 4 || kind == 6)) return "";
    switch (kind) {
      case 0:
        return NewTimeoutAt(c, in);
      case 1:
        return CancelAll(c);
      case 2:
      case 3:
      case 7:
        if (c.model.next_id() == 0) return "";
        return ResetFromInput(in, c, kind == 7, kind == 3);
      case 4:
        return NewPeriodic(c, in);
      case 5:
        return RunResetRace(in, c);
      default:  // 6
        return NewTimeoutFromInput(in, c, false, true);
    }
  }
  const uint8_t opcode = raw & 15;
  if (gone && opcode != 6 && opcode != 7 && opcode != 12) return "";
  switch (opcode) {
    case 6:
    case 7:
      return Cancel(c, PickTimeout(in, c));
    case 14:
      return Cancel(c, c.model.next_id() - 1);
    case 8:
    case 9:
    case 10:
      return Advance(c, c.TakeAdvance(in.Byte()));
    case 11:
      return Stop(c);
    case 12: {
      const int64_t id = PickTimeout(in, c);
      return id < 0 ? "" : TakeTask(c, id);
    }
    case 15:
      Destroy(c);
      return "";
    default:  // 0-5, 13
      return NewTimeoutFromInput(in, c, opcode == 13, false);
  }
}

bool LocalChecksPlanAfter(uint8_t opcode) {
  return opcode != 5 && opcode != 6 && opcode != 14;
}

std::string RunLocalOp(uint8_t opcode, Reader& in, FuzzContext& c) {
  if (c.model.destroyed() &&
      (opcode < 5 || opcode > 14 || (opcode >= 7 && opcode <= 10))) {
    return "";  // only handles are left
  }
  switch (opcode) {
    case 0:
    case 1:
    case 2:
      return NewTimeoutFromInput(in, c, false, false);
    case 3:
      return NewTimeoutAt(c, in);
    case 4:
      return NewPeriodic(c, in);
    case 5:
      return Cancel(c, PickTimeout(in, c));
    case 6:
      return Cancel(c, c.model.next_id() - 1);
    case 7:
    case 8:
      return Advance(c, c.TakeAdvance(in.Byte()));
    case 9:
      return FollowPlan(c);
    case 10:
      return Stop(c);
    case 11: {
      const int64_t id = PickTimeout(in, c);
      return id < 0 ? "" : TakeTask(c, id);
    }
    case 12:
    case 13:
      if (c.model.next_id() == 0) return "";
      return ResetFromInput(in, c, false, opcode == 13);
    case 14:
      return RunLocalRace(in, c);
    default:
      break;
  }
  // 15: the less frequent calls.
  switch (in.Byte() % 6) {
    case 0:
      return CancelAll(c);
    case 1:
      return NewTimeoutFromInput(in, c, false, true);
    case 2:
      return NewTimeoutFromInput(in, c, true, false);
    case 3:
      return Advance(c, 0);
    case 4:
      Destroy(c);
      return "";
    default:  // 5
      if (c.model.next_id() == 0) return "";
      return ResetFromInput(in, c, true, false);
  }
}

}  // namespace tickwheel::model
