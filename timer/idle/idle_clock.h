// timer/idle/idle_clock.h
// -----------------------------------------------------------------------------
// Internal. CoarseClock: the shared, cheaply readable "now" that
// IdleHandle::touch() stamps activity with, so that a touch costs one relaxed
// load and one relaxed store instead of a clock read (a vDSO call, many
// times the cost of the store).
//
// The value is a *ceiling*: whoever refreshes it reads the real Clock (r) and
// publishes r + period, where `period` is the refresh period. The refresher
// (IdleCore's refresh task, and every wheel check) runs again within `period`
// as long as the timer's worker is on time, so at any moment
//
//     true time  <=  value  <=  true time + period          (worker on time)
//     true time - L  <=  value                              (worker L late)
//
// and a stamp taken from it is never earlier than the activity it records
// unless the worker was late. See timer/idle_tracker.h for what this means
// for on_idle.
//
// Memory ordering: the value carries no other data, so relaxed loads and
// stores suffice; per-location coherence keeps every reader's sequence of
// values monotonic, and Publish() never lowers the value (a CAS-max), so two
// refreshers racing (an old and a new worker across Deactivate/Activate)
// cannot move it backwards.
//
// This class is thread-safe.

#ifndef TICKWHEEL_TIMER_IDLE_CLOCK_H_
#define TICKWHEEL_TIMER_IDLE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace tickwheel::internal {

class CoarseClock {
 public:
  // The current ceiling, in the Clock's nanoseconds. One relaxed load.
  int64_t Load() const { return value_.load(std::memory_order_relaxed); }

  // Raises the value to `ceiling` if it is lower; never lowers it. Returns
  // the value before the call, so that the refresher can tell by how much
  // the previous ceiling had expired (the worker was late).
  int64_t Publish(int64_t ceiling) {
    int64_t cur = value_.load(std::memory_order_relaxed);
    while (cur < ceiling && !value_.compare_exchange_weak(
                                cur, ceiling, std::memory_order_relaxed)) {
    }
    return cur;
  }

  // The atomic itself, for IdleHandle to cache (touch() loads it directly).
  const std::atomic<int64_t>* cell() const { return &value_; }

 private:
  // Own cache line: read by every touch(), written once per refresh.
  alignas(64) std::atomic<int64_t> value_{0};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_CLOCK_H_
