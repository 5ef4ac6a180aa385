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
// implement NowNanos() and NewSleeper(). The interface, with the contract
// of each call, is declared in base/clock.h, which this header includes, so
// that the engine reads and sleeps on a user's Clock directly.
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

#include "tickwheel/base/clock.h"  // Clock, internal::MonotonicNanos()

namespace tickwheel {

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
