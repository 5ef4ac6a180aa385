// The race operations of opcode 0xFD (RunResetRace(), fuzz_races.h): reset()
// and cancelAll() against another call, checked by what every order of the
// two calls has in common, and reset() racing the expiry within a tick.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_races.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::model {
namespace {

constexpr int64_t kUs = 1000;  // nanoseconds

// A delay for kinds 0 and 1: at least a tick (fuzz_races.h).
absl::Duration RaceDelay(uint8_t byte, const FuzzContext& c) {
  return std::max(DecodeDelay(byte, c.tick, c.wheel),
                  absl::Nanoseconds(c.tick));
}

std::string ResetTrueNotPending(int64_t id) {
  return fmt::format("race: reset(#{}) returned true, model has it not pending",
                     id);
}

// Kind 0: cancel() against reset().
std::string RaceCancelWithReset(Reader& in, FuzzContext& c, int64_t id,
                                bool was_pending) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  const absl::Duration delay = RaceDelay(in.Byte(), c);
  std::atomic<bool> reset{false};
  Racer::Get().Race(
      [&] {
        if (shared.cancel()) wins.fetch_add(1);
      },
      [&] { reset = shared.reset(delay); });
  c.real.Settle();
  c.trace +=
      fmt::format("  race: cancel(#{}) -> {} || reset({}) -> {}\n", id,
                  wins.load(), absl::FormatDuration(delay), reset.load());
  if (wins.load() != (was_pending ? 1 : 0)) {
    return fmt::format(
        "race cancel(#{}) || reset: cancel won {}, but pending before: {}", id,
        wins.load(), was_pending);
  }
  if (reset.load() && !c.model.Reset(id, delay)) return ResetTrueNotPending(id);
  c.model.Cancel(id);
  return "";
}

// Kind 1: reset() against reset(); the model applies the other one first,
// then the one that stuck.
std::string RaceResets(Reader& in, FuzzContext& c, int64_t id,
                       bool was_pending) {
  const Timeout& shared = c.real.SharedHandle(id);
  const absl::Duration a = RaceDelay(in.Byte(), c);
  const absl::Duration b = RaceDelay(in.Byte(), c);
  std::atomic<bool> ra{false}, rb{false};
  Racer::Get().Race([&] { ra = shared.reset(a); },
                    [&] { rb = shared.reset(b); });
  c.real.Settle();
  const int64_t da = c.model.ResetDeadline(a);
  const int64_t db = c.model.ResetDeadline(b);
  const int64_t got = shared.deadline().time_since_epoch().count();
  c.trace += fmt::format(
      "  race: reset(#{}, {}) -> {} || reset({}) -> {}, deadline {}\n", id,
      absl::FormatDuration(a), ra.load(), absl::FormatDuration(b), rb.load(),
      got);
  if (ra.load() != was_pending || rb.load() != was_pending) {
    return fmt::format(
        "race reset(#{}) x2: returned {} and {}, pending before: {}", id,
        ra.load(), rb.load(), was_pending);
  }
  if (!was_pending) return "";
  if (got != da && got != db) {
    return fmt::format("race reset(#{}) x2: deadline {}, neither {} nor {}", id,
                       got, da, db);
  }
  c.model.ResetAt(id, got == da ? db : da);
  c.model.ResetAt(id, got);
  return "";
}

// Kind 3: the racer's cancelAll() against the test thread's stop().
std::string RaceCancelAllWithStop(FuzzContext& c) {
  const int64_t pending = c.model.Pending();
  std::atomic<int64_t> count{-1};
  Code code;
  std::vector<int64_t> stopped;
  Racer::Get().Race([&] { stopped = c.real.Stop(&code); },
                    [&] { count = c.real.CancelAll(); });
  c.trace += fmt::format("  race: cancelAll() -> {} || stop() -> [{}]\n",
                         count.load(), fmt::join(stopped, ","));
  if (count.load() + static_cast<int64_t>(stopped.size()) != pending) {
    return fmt::format(
        "race cancelAll() || stop(): {} cancelled + {} stopped, {} were "
        "pending",
        count.load(), stopped.size(), pending);
  }
  const int64_t m = c.model.CancelAllExcept(stopped);
  if (m != count.load()) {
    return fmt::format(
        "race cancelAll() || stop(): cancelAll() real {} model {}",
        count.load(), m);
  }
  return CompareStop(c.model, code, stopped, c.model.Stop());
}

// Kind 4: the racer's reset() against the test thread's clock advance, to a
// deadline past the advance's end from either clock reading, so that the
// moved timeout never runs within it, wherever the reset() lands.
std::string RaceResetWithAdvance(Reader& in, FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  const int64_t nanos = c.TakeAdvance(in.Byte());
  const absl::Duration delay =
      std::max(RaceDelay(in.Byte(), c), absl::Nanoseconds(nanos + c.tick));
  const int64_t before = c.model.ResetDeadline(delay);
  std::atomic<bool> reset{false};
  Racer::Get().Race([&] { c.real.Advance(nanos); },
                    [&] { reset = shared.reset(delay); });
  const std::vector<Event> observed = c.real.events();
  const int64_t got = shared.deadline().time_since_epoch().count();
  c.trace += fmt::format(
      "  race: reset(#{}, {}) -> {}, deadline {} || advance({}ns)\n", id,
      absl::FormatDuration(delay), reset.load(), got, nanos);
  if (!reset.load()) {
    // After the advance (which may have run it), or it was not pending.
    c.model.Advance(absl::Nanoseconds(nanos), &observed);
    if (c.model.state(id) == TimerModel::State::kPending) {
      return fmt::format(
          "race reset(#{}) || advance: reset() returned false, the model has "
          "it pending after the advance",
          id);
    }
    return "";
  }
  // Before the worker reached it, with the clock read before or after the
  // advance moved it: either way it does not run in the advance.
  const int64_t after = static_cast<int64_t>(
      std::min<__int128>(__int128{before} + nanos, INT64_MAX));
  if (got != before && got != after) {
    return fmt::format(
        "race reset(#{}) || advance: deadline {}, neither {} nor {}", id, got,
        before, after);
  }
  if (!c.model.ResetAt(id, got)) return ResetTrueNotPending(id);
  c.model.Advance(absl::Nanoseconds(nanos), &observed);
  return "";
}

// Up to eight timeouts due within the first 255 us of a 1 ms tick, on a
// ManualClock of their own, and how far ahead the racer moves each.
struct WithinTickInput {
  int n = 0;
  std::array<int64_t, 8> delay{};
  std::array<int64_t, 8> ahead{};
  int64_t step = 0;  // how far the test thread moves the clock at a time
};

// Bytes: the count, then per timeout its delay and how far ahead the racer
// moves it, then the step.
WithinTickInput DecodeWithinTick(Reader& in) {
  WithinTickInput w;
  w.n = 1 + in.Byte() % 8;
  for (int i = 0; i < w.n; ++i) {
    w.delay[i] = (1 + in.Byte()) * kUs;
    w.ahead[i] = 1 + in.Byte() * 97;
  }
  w.step = (1 + in.Byte() % 32) * kUs;
  return w;
}

// What the within-tick race's timeouts saw when they ran.
struct WithinTickRuns {
  std::array<std::atomic<int>, 8> runs{};
  std::array<std::atomic<int64_t>, 8> early{};  // nanoseconds before due
};

// The racer moves each timeout, again and again, to a later deadline inside
// the tick while the test thread steps the clock through it.
void RaceResetsThroughTheTick(const WithinTickInput& w, WithinTickRuns& seen) {
  constexpr int64_t kTick = 1'000'000;
  auto clock = std::make_shared<ManualClock>();
  TimerOptions options;
  options.tick_duration = absl::Nanoseconds(kTick);
  options.slack = absl::ZeroDuration();
  options.clock = clock;
  std::unique_ptr<Timer> timer = Timer::Create(options).value();
  std::vector<Timeout> handles;
  for (int i = 0; i < w.n; ++i) {
    auto task = [&seen, i, clock](const Timeout& self) {
      seen.runs[i].fetch_add(1);
      const int64_t due = self.deadline().time_since_epoch().count();
      const int64_t now = clock->NowNanos();
      if (now < due) seen.early[i] = due - now;
    };
    handles.push_back(
        timer->newTimeout(std::move(task), absl::Nanoseconds(w.delay[i]))
            .value());
  }
  clock->AwaitIdle();
  Racer::Get().Race(
      [&] {
        for (int64_t t = 0; t < 300 * kUs; t += w.step) {
          clock->AdvanceAndSettle(absl::Nanoseconds(w.step));
        }
      },
      [&] {
        for (int round = 0; round < 4; ++round) {
          for (int i = 0; i < w.n; ++i) {
            handles[i].resetAt(TimePoint(
                std::chrono::nanoseconds(clock->NowNanos() + w.ahead[i])));
          }
        }
      });
  clock->AdvanceAndSettle(absl::Nanoseconds(2 * kTick));  // the rest run
}

// Kind 5: reset() racing the expiry within a tick, on a timer of its own
// with a slack of 0 (the model describes the default slack only), checked by
// what holds in every order: no task runs before the deadline it holds when
// it runs (its deadline() then, since a reset() can no longer succeed), and
// each runs exactly once.
std::string RunWithinTickResetRace(Reader& in, FuzzContext& c) {
  const WithinTickInput w = DecodeWithinTick(in);
  CountRace(c);
  WithinTickRuns seen;
  RaceResetsThroughTheTick(w, seen);
  c.trace += fmt::format(
      "  race: within-tick resets of {} timeouts, step {}ns\n", w.n, w.step);
  for (int i = 0; i < w.n; ++i) {
    if (seen.early[i].load() != 0) {
      return fmt::format(
          "race within-tick reset: timeout {} ran {}ns before its deadline", i,
          seen.early[i].load());
    }
    if (seen.runs[i].load() != 1) {
      return fmt::format("race within-tick reset: timeout {} ran {} times", i,
                         seen.runs[i].load());
    }
  }
  return "";
}

}  // namespace

std::string RunResetRace(Reader& in, FuzzContext& c) {
  const uint8_t kind_byte = in.Byte();
  if (kind_byte & 8) return RunWithinTickResetRace(in, c);
  int kind = (kind_byte & 4) != 0 ? 4 : kind_byte & 3;
  if (c.model.next_id() == 0) return "";
  CountRace(c);
  const int64_t id = in.Byte() % c.model.next_id();
  if (c.model.destroyed() && kind >= 2) kind = 0;
  if (kind == 4 && (!c.unlimited || c.model.IsPeriodic(id))) kind = 0;
  const bool was_pending = c.model.state(id) == TimerModel::State::kPending;
  switch (kind) {
    case 0:
      return RaceCancelWithReset(in, c, id, was_pending);
    case 1:
      return RaceResets(in, c, id, was_pending);
    case 2:
      return RaceCancelWithCancelAll(c, id);
    case 4:
      return RaceResetWithAdvance(in, c, id);
    default:
      return RaceCancelAllWithStop(c);
  }
}

}  // namespace tickwheel::model
