// timer/internal/engine_bridge.h
// -----------------------------------------------------------------------------
// Internal to the facade: what every timer type (Timer, LocalTimer) hands
// its engine and takes back from it, written once: the options' wheel,
// checked; the clock the engine reads; metrics from the engine's counters.
// (A task is called with its handle by its own table: TaskOps::run, built in
// timer/internal/task.h.) Only
// the facade's .cc files include it (the engine's types are declared here,
// not included, so that this header stays on the public side of the layers:
// CONTRIBUTING.md).

#ifndef TICKWHEEL_TIMER_INTERNAL_ENGINE_BRIDGE_H_
#define TICKWHEEL_TIMER_INTERNAL_ENGINE_BRIDGE_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel::internal {

struct TimerCounters;

// A timer's wheel, checked: the tick in nanoseconds, ticks_per_wheel
// rounded up to a power of two, the slack in [0, tick] nanoseconds.
struct CheckedShape {
  int64_t tick_nanos;
  int ticks_per_wheel;
  int64_t slack_nanos;
};
// InvalidArgument: `tick` <= 0, below 1 ns or infinite; `ticks_per_wheel`
// <= 0 or > 2^30; tick * (ticks_per_wheel rounded up) overflows int64
// nanoseconds; `slack` < 0. An empty slack, or one at or above the tick,
// is one tick; below it, whole nanoseconds rounded down (never later than
// asked).
absl::StatusOr<CheckedShape> CheckShape(
    absl::Duration tick, int ticks_per_wheel,
    const std::optional<absl::Duration>& slack);

// The clock the engine reads and sleeps on: `clock`, or RealClock::Shared()
// when it is empty; `*monotonic` tells whether it is the real clock, which
// the engine then reads inline (MonotonicNanos()).
std::shared_ptr<Clock> ResolveClock(std::shared_ptr<Clock> clock,
                                    bool* monotonic);

// TimerMetrics from an engine's counters and lateness histogram, its
// pending count and its successful cancel() calls (relaxed loads: each
// value exact, the set a few events apart while the engine runs).
TimerMetrics MetricsFrom(const TimerCounters& counters, int64_t pending,
                         int64_t cancel_calls);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_ENGINE_BRIDGE_H_
