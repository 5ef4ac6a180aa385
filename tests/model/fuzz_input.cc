#include "tests/model/fuzz_input.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

namespace tickwheel::model {

std::string FuzzConfig::ToString() const {
  return fmt::format(
      "{} tick={}ns ticks_per_wheel={} max_pending={} inline_executor={} "
      "slack={} clock_start={}",
      kind == TimerKind::kLocal ? "LocalTimer" : "Timer", tick_nanos,
      ticks_per_wheel, max_pending, inline_executor,
      zero_slack ? "0" : "one tick", clock_start);
}

// byte 0: tick (bits 0-2), ticks_per_wheel (bits 3-5). byte 1: max_pending
// (bits 0-3), the inline executor (bit 4), the clock's start (bits 5-7).
FuzzConfig DecodeConfig(Reader& in, TimerKind kind) {
  static constexpr std::array<int64_t, 8> kTicks = {1,  2,   3,    7,
                                                    10, 100, 1000, 1000000};
  static constexpr std::array<int, 8> kWheels = {1, 2, 3, 4, 5, 8, 16, 64};
  // Clock readings at which the ManualClock starts; bit 7 negates them (a
  // clock may have any origin: tests/clock_extremes_test.cc).
  static constexpr std::array<int64_t, 4> kStarts = {0, 1, 999999999,
                                                     int64_t{1} << 60};
  const uint8_t b0 = in.Byte();
  const uint8_t b1 = in.Byte();
  FuzzConfig c;
  c.tick_nanos = kTicks[b0 & 7];
  c.ticks_per_wheel = kWheels[(b0 >> 3) & 7];
  c.max_pending = (b1 & 15) < 6 ? 0 : (b1 & 15) - 5;
  c.inline_executor = (b1 & 16) != 0;
  c.clock_start = kStarts[(b1 >> 5) & 3];
  if (b1 & 0x80) c.clock_start = -c.clock_start - 1;
  c.kind = kind;
  if (kind == TimerKind::kLocal) {
    c.zero_slack = kFuzzLocalSlackBelowTick && c.inline_executor;
    c.inline_executor = false;
    if (!kFuzzLocalEndOfRange && c.clock_start < 0) {
      c.clock_start = -(c.clock_start + 1);
    }
  }
  return c;
}

absl::Duration DecodeDelay(uint8_t c, int64_t tick, int64_t wheel) {
  const int64_t k = c & 31;
  switch (c >> 5) {
    case 0:
      return absl::Nanoseconds(k * tick);
    case 1:
      return absl::Nanoseconds(k * tick - 1);
    case 2:
      return absl::Nanoseconds(k * tick + 1);
    case 3:
      return absl::Nanoseconds(k * tick + tick / 2);
    case 4:
      return absl::Nanoseconds(((k & 7) * wheel + (k >> 3)) * tick);
    case 5:
      return absl::Nanoseconds(-k * tick - 1);
    case 6: {
      static const std::array<absl::Duration, 8> kSpecial = {
          absl::InfiniteDuration(),
          -absl::InfiniteDuration(),
          absl::Nanoseconds(INT64_MAX),
          absl::Nanoseconds(INT64_MAX - 1),
          absl::Nanoseconds(INT64_MIN),
          absl::Hours(2562048),  // just over INT64_MAX nanoseconds
          absl::Nanoseconds(INT64_MAX / 2),
          absl::ZeroDuration(),
      };
      return kSpecial[k & 7];
    }
    default:
      return absl::Nanoseconds(k);  // raw nanoseconds, mostly below a tick
  }
}

// Bits 0-1: repeat; bits 2-4: the child's delay; bits 5-7: 4 cancels the
// previous timeout, 5 also throws, 6 tries stop(), 7 throws.
TaskAction DecodeAction(uint8_t a, int64_t tick, int64_t wheel) {
  TaskAction action;
  action.repeat = a & 3;
  const std::array<int64_t, 8> kChildDelays = {
      0, -1, 1, tick / 2, tick, tick + 1, 3 * tick, wheel * tick + 1};
  action.child_delay = absl::Nanoseconds(kChildDelays[(a >> 2) & 7]);
  switch (a >> 5) {
    case 4:
      action.cancel_previous = true;
      break;
    case 5:
      action.cancel_previous = true;
      action.throw_after = true;
      break;
    case 6:
      action.try_stop = true;
      break;
    case 7:
      action.throw_after = true;
      break;
    default:
      break;
  }
  return action;
}

int64_t DecodeAdvance(uint8_t c, int64_t tick, int64_t wheel) {
  const int64_t k = c & 63;
  switch (c >> 6) {
    case 0:
      return k;
    case 1:
      return k * tick;
    case 2:
      return k * tick + 1;
    default:
      return ((k & 7) * wheel + ((k >> 3) & 7)) * tick - 1;
  }
}

absl::Duration DecodePeriod(uint8_t p, int64_t tick, int64_t wheel) {
  const std::array<int64_t, 8> kPeriods = {
      tick, 2 * tick,     3 * tick, tick + 1, std::max<int64_t>(1, tick / 2),
      1,    wheel * tick, 0};
  return absl::Nanoseconds(kPeriods[p & 7] * (1 + ((p >> 3) & 3)));
}

TaskAction DecodePeriodicAction(uint8_t flags) {
  TaskAction action;
  action.periodic_runs = (flags & 4) != 0 ? 0 : (flags & 3) + 1;
  action.throw_after = (flags & 8) != 0;
  action.cancel_all = (flags & 16) != 0;
  action.cancel_previous = (flags & 32) != 0;
  action.try_stop = (flags & 64) != 0;
  return action;
}

Missed DecodeMissed(uint8_t m) { return static_cast<Missed>(m % 3); }

}  // namespace tickwheel::model
