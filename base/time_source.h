// base/time_source.h
// -----------------------------------------------------------------------------
// Internal. TimeSource: the engine's view of a clock, the time and a way to
// sleep until a deadline, so that the engine needs no facade header. The
// facade adapts a user's tickwheel::Clock (timer/clock.h, which documents
// the contract the adapter forwards) to it; MonotonicNanos() is the real
// clock, inline.
//
// Thread-safety: NowNanos() and Sleeper::Wake() from any thread; a Sleeper
// sleeps on one.

#ifndef TICKWHEEL_BASE_TIME_SOURCE_H_
#define TICKWHEEL_BASE_TIME_SOURCE_H_

#include <time.h>

#include <cstdint>
#include <memory>

namespace tickwheel::internal {

class TimeSource {
 public:
  // Blocks one thread until a deadline or until another thread wakes it.
  // Created by NewSleeper(); used by exactly one sleeping thread, while
  // Wake() may be called from any thread.
  class Sleeper {
   public:
    virtual ~Sleeper() = default;

    // Blocks until the clock reads at least `deadline_nanos`, or until Wake()
    // has been called since the previous SleepUntil() returned (a Wake() that
    // comes before SleepUntil() is not lost: the next SleepUntil() returns at
    // once). A deadline of INT64_MAX means "no deadline": only Wake() ends the
    // sleep, even on a clock that reads INT64_MAX. Spurious early returns are
    // allowed; callers re-check the time.
    virtual void SleepUntil(int64_t deadline_nanos) = 0;

    // Makes the current or next SleepUntil() return. Thread-safe; cheap when
    // nobody sleeps.
    virtual void Wake() = 0;
  };

  virtual ~TimeSource() = default;

  // Monotonic time in nanoseconds. Thread-safe; never decreases.
  virtual int64_t NowNanos() = 0;

  // A new sleeper bound to this clock. The clock must outlive it.
  virtual std::unique_ptr<Sleeper> NewSleeper() = 0;
};

// CLOCK_MONOTONIC, which std::chrono::steady_clock reads, in nanoseconds:
// inline, so that a caller that knows it has the real clock (newTimeout())
// pays the vDSO call alone, without a virtual call around it.
inline int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_TIME_SOURCE_H_
