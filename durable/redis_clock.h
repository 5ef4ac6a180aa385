// durable/redis_clock.h
// -----------------------------------------------------------------------------
// Internal. RedisClock: what this process knows of Redis's clock (TIME, in
// microseconds since the Unix epoch) on its own monotonic clock
// (RealClock::MonotonicNanos(), nanoseconds), from round trips.
//
// A script that read TIME = r ran between the local readings `before` and
// `after` of its round trip, so at a later local time L Redis's clock reads
// between r + (L - after) and r + (L - before), as long as both clocks run
// at the same rate (they differ by parts per million). The delivery uses the
// lower bound to decide when to ask Redis to start a timer (so it asks at
// most one round trip late, and Redis itself refuses a start that would be
// early), and the upper bound to decide when a lease needs renewing.
//
// Pure arithmetic, saturating at the int64 range, no clock reads:
// thread-compatible (the delivery keeps it under its mutex).

#ifndef TICKWHEEL_DURABLE_REDIS_CLOCK_H_
#define TICKWHEEL_DURABLE_REDIS_CLOCK_H_

#include <cstdint>

namespace tickwheel::durable::internal {

class RedisClock {
 public:
  // A narrower window is kept over a wider one unless the kept sample is
  // older than this (clocks drift; NTP slews Redis's).
  static constexpr int64_t kMaxSampleAgeNanos = 1'000'000'000;

  // A reply stamped `redis_us` by a script that ran within local
  // [before_nanos, after_nanos].
  void Observe(int64_t redis_us, int64_t before_nanos, int64_t after_nanos);

  // Whether any round trip has been observed.
  bool known() const { return known_; }

  // Redis's clock at local time `local_nanos`: surely at least / at most.
  int64_t AtLeastMicros(int64_t local_nanos) const;
  int64_t AtMostMicros(int64_t local_nanos) const;
  // The middle of the two: the best single estimate (for lateness).
  int64_t EstimateMicros(int64_t local_nanos) const;

  // The local time from which Redis's clock surely reads >= `redis_us`.
  int64_t LocalWhenSurely(int64_t redis_us) const;
  // The local time from which Redis's clock may read >= `redis_us`.
  int64_t LocalWhenPossibly(int64_t redis_us) const;

 private:
  bool known_ = false;
  // Redis's clock minus local time, in nanoseconds: the bounds of the kept
  // sample, and when it was taken.
  int64_t low_offset_ = 0;   // r - after
  int64_t high_offset_ = 0;  // r - before
  int64_t taken_at_ = 0;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_REDIS_CLOCK_H_
