// What the facades hand the engine and take from it.

#include "tickwheel/timer/internal/engine_bridge.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "tickwheel/worker/timer_counters.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {

struct HistogramAccess {
  static void Fill(LatenessHistogram& h, const HistogramCounts& counts) {
    for (int b = 0; b < kHistogramBuckets; ++b) {
      const int64_t n = counts.counts[b].load(std::memory_order_relaxed);
      h.counts_[b] = n;
      h.count_ += n;
    }
    h.max_ = counts.max.load(std::memory_order_relaxed);
    h.sum_ = counts.sum.load(std::memory_order_relaxed);
  }
};

absl::StatusOr<CheckedShape> CheckShape(
    absl::Duration tick, int ticks_per_wheel,
    const std::optional<absl::Duration>& slack) {
  if (tick <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(fmt::format(
        "tick_duration must be > 0, got {}", absl::FormatDuration(tick)));
  }
  if (tick == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("tick_duration must be finite");
  }
  const int64_t tick_nanos = absl::ToInt64Nanoseconds(tick);
  if (tick_nanos < 1) {
    return absl::InvalidArgumentError(
        fmt::format("tick_duration must be at least 1ns, got {}",
                    absl::FormatDuration(tick)));
  }
  if (ticks_per_wheel <= 0 || ticks_per_wheel > Wheel::kMaxTicksPerWheel) {
    return absl::InvalidArgumentError(fmt::format(
        "ticks_per_wheel must be in [1, 2^30], got {}", ticks_per_wheel));
  }
  const int wheel = Wheel::NormalizeTicksPerWheel(ticks_per_wheel);
  if (tick_nanos > INT64_MAX / wheel) {
    return absl::InvalidArgumentError(fmt::format(
        "tick_duration ({}) * ticks_per_wheel ({}, rounded up from {}) "
        "overflows int64 nanoseconds; use a shorter tick or a smaller wheel",
        absl::FormatDuration(tick), wheel, ticks_per_wheel));
  }
  int64_t slack_nanos = tick_nanos;
  if (slack.has_value()) {
    if (*slack < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(fmt::format(
          "slack must be >= 0, got {}", absl::FormatDuration(*slack)));
    }
    // Whole nanoseconds, rounded down: never later than asked.
    slack_nanos = std::min(tick_nanos, absl::ToInt64Nanoseconds(absl::Trunc(
                                           *slack, absl::Nanoseconds(1))));
  }
  return CheckedShape{tick_nanos, wheel, slack_nanos};
}

std::shared_ptr<Clock> ResolveClock(std::shared_ptr<Clock> clock,
                                    bool* monotonic) {
  if (clock == nullptr) clock = RealClock::Shared();
  *monotonic = dynamic_cast<RealClock*>(clock.get()) != nullptr;
  return clock;
}

TimerMetrics MetricsFrom(const TimerCounters& c, int64_t pending,
                         int64_t cancel_calls) {
  constexpr std::memory_order kRelaxed = std::memory_order_relaxed;
  TimerMetrics m;
  m.pending = pending;
  m.expired = c.expired();
  m.cancelled = c.cancelled_by_all.load(kRelaxed) + cancel_calls;
  m.ticks = c.ticks.load(kRelaxed);
  m.catch_up_ticks = c.catch_up_ticks.load(kRelaxed);
  m.wakeups = c.wakeups.load(kRelaxed);
  m.worst_lateness = absl::Nanoseconds(c.lateness.max.load(kRelaxed));
  HistogramAccess::Fill(m.lateness, c.lateness);
  return m;
}

}  // namespace tickwheel::internal
