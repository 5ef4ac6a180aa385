// timer/clock.h
// -----------------------------------------------------------------------------
// The time source of a Timer, and the way its worker sleeps.
//
// A Timer asks its Clock for the time and asks a Clock::Sleeper to block its
// worker until a deadline; it never calls std::chrono or sleeps directly.
// Production code leaves TimerOptions::clock empty and gets RealClock
// (std::chrono::steady_clock). Tests and simulations pass a ManualClock
// (timer/manual_clock.h) and advance time by hand, so that every timing
// decision can be checked deterministically. To drive a timer from another
// time source (a simulation's virtual time, say), derive from Clock and
// implement NowNanos() and NewSleeper().
//
// Times are int64 nanoseconds on a monotonic scale whose origin the clock
// chooses; only differences matter to the timer.

#ifndef TICKWHEEL_TIMER_CLOCK_H_
#define TICKWHEEL_TIMER_CLOCK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <cstdint>
#include <memory>

#include "tickwheel/base/time_source.h"  // MonotonicNanos()

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

// std::chrono::steady_clock (CLOCK_MONOTONIC), and a condition variable to
// sleep on. This class is thread-safe.
class RealClock final : public Clock {
 public:
  int64_t NowNanos() override { return MonotonicNanos(); }
  // CLOCK_MONOTONIC in nanoseconds, without a virtual call.
  static int64_t MonotonicNanos() { return internal::MonotonicNanos(); }
  std::unique_ptr<Sleeper> NewSleeper() override;

  // The process-wide instance used when TimerOptions::clock is empty.
  static std::shared_ptr<Clock> Shared();
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_CLOCK_H_
