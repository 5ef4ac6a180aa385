// timer/idle_tracker_metrics.h
// -----------------------------------------------------------------------------
// IdleTrackerMetrics: a snapshot of one IdleTracker's counters, for dashboards,
// logs and tests. Formats with fmt ("{}") and converts with ToString(), like
// TimerMetrics (timer/metrics.h); IdleTracker::timerMetrics() gives the
// TimerMetrics of the wheel underneath.
//
// Each counter is read with a relaxed load, so a snapshot taken while the
// worker runs is a set of individually exact values that may be a few events
// apart from each other; a snapshot taken while the tracker is inactive (after
// the last Deactivate() returned OK) is exact.

#ifndef TICKWHEEL_TIMER_IDLE_TRACKER_METRICS_H_
#define TICKWHEEL_TIMER_IDLE_TRACKER_METRICS_H_

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "absl/time/time.h"

namespace tickwheel {

struct IdleTrackerMetrics {
  // Registrations that may still fire: registered (or re-registered) and
  // neither fired nor unregistered. Dormant ones (tracker inactive) count.
  int64_t tracked = 0;
  // on_idle calls started.
  int64_t fired = 0;
  // Wheel checks that found activity since the entry was armed and put the
  // entry back on the wheel for exactly the remaining time (the lazy path).
  int64_t rearmed = 0;
  // Wheel entries that came up for a registration that has moved on (it was
  // re-registered, unregistered, re-armed by Activate() or detached) and were
  // dropped without looking further.
  int64_t stale_dropped = 0;
  // Timer operations issued for registrations: newTimeout() and cancel()
  // calls (the clock-refresh task is not counted; see `refreshes`).
  int64_t timer_ops = 0;
  // Runs of the periodic clock-refresh task.
  int64_t refreshes = 0;
  // Current Activate() count (0: inactive, every registration dormant).
  int64_t active = 0;
  // Largest (time of the check that decided to fire) - (recorded last
  // activity + idle_timeout); zero before the first fire. Normally below one
  // tick plus one refresh period.
  absl::Duration worst_lateness = absl::ZeroDuration();
  // Largest amount by which the coarse clock's ceiling had fallen behind the
  // real clock when it was next refreshed (the worker was late). A touch()
  // made in such a gap is stamped up to this much before it happened, so
  // on_idle can run up to this much early for it; zero while the worker is
  // on time.
  absl::Duration worst_clock_lag = absl::ZeroDuration();

  std::string ToString() const;
};

}  // namespace tickwheel

template <>
struct fmt::formatter<tickwheel::IdleTrackerMetrics>
    : fmt::formatter<std::string> {
  template <typename FormatContext>
  auto format(const tickwheel::IdleTrackerMetrics& m,
              FormatContext& ctx) const {
    return fmt::formatter<std::string>::format(m.ToString(), ctx);
  }
};

#endif  // TICKWHEEL_TIMER_IDLE_TRACKER_METRICS_H_
