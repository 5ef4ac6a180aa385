// base/clock.h
// -----------------------------------------------------------------------------
// tickwheel::Clock, the time source of a timer and the way its worker sleeps,
// declared once for both sides of the layers: users implement it and pass it
// in the options (timer/clock.h, which a user includes, says how, and adds
// RealClock), and the engine reads and sleeps on it directly, with no facade
// header and no adapter in between. MonotonicNanos() is the real clock,
// inline.

#ifndef TICKWHEEL_BASE_CLOCK_H_
#define TICKWHEEL_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>
#include <memory>

namespace tickwheel {

// The interface a time source implements. Thread-safety: NowNanos() and
// Sleeper::Wake() may be called from any thread; a Sleeper sleeps on one.
class Clock {
 public:
  // What a timer's worker sleeps on: blocks one thread until a deadline or
  // until another thread wakes it. Made by NewSleeper(); used by exactly
  // one sleeping thread, while Wake() may be called from any thread.
  class Sleeper {
   public:
    virtual ~Sleeper() = default;

    // Blocks until the clock reads at least `deadline_nanos`, or until
    // Wake() has been called since the previous SleepUntil() returned (a
    // Wake() that comes first is not lost: the next SleepUntil() returns at
    // once). INT64_MAX means "no deadline": only Wake() ends the sleep,
    // even on a clock that reads INT64_MAX. Spurious early returns are
    // allowed; callers re-check the time.
    virtual void SleepUntil(int64_t deadline_nanos) = 0;

    // Makes the current or next SleepUntil() return. Thread-safe; cheap
    // when nobody sleeps.
    virtual void Wake() = 0;
  };

  virtual ~Clock() = default;

  // Monotonic time in nanoseconds. Thread-safe; never decreases.
  virtual int64_t NowNanos() = 0;

  // A new sleeper bound to this clock; the clock must outlive it. Each
  // Timer's worker takes one when it starts.
  virtual std::unique_ptr<Sleeper> NewSleeper() = 0;
};

namespace internal {

// CLOCK_MONOTONIC, which std::chrono::steady_clock reads, in nanoseconds:
// inline, so that a caller that knows it has the real clock (newTimeout())
// pays the vDSO call alone, without a virtual call around it.
inline int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_BASE_CLOCK_H_
