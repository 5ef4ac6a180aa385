// worker/clock.h
// -----------------------------------------------------------------------------
// The time source of a Timer's worker, and the way the worker sleeps.
//
// The worker never calls std::chrono or sleeps directly: it asks its Clock for
// the time and asks a Clock::Sleeper to block until a deadline. Tests and
// simulations pass a ManualClock (worker/manual_clock.h) in
// TimerOptions::clock and advance time by hand, so every timing decision of
// the wheel can be checked deterministically. Production code leaves
// TimerOptions::clock empty and gets RealClock.
//
// Times are int64 nanoseconds on a monotonic scale whose origin the clock
// chooses; only differences matter to the timer.

#ifndef TICKWHEEL_WORKER_CLOCK_H_
#define TICKWHEEL_WORKER_CLOCK_H_

#include <time.h>

#include <cstdint>
#include <memory>

namespace tickwheel {

class Clock {
 public:
  // Blocks one thread until a deadline or until another thread wakes it.
  // Created by Clock::NewSleeper(); used by exactly one sleeping thread, while
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

  virtual ~Clock() = default;

  // Monotonic time in nanoseconds. Thread-safe; never decreases.
  virtual int64_t NowNanos() = 0;

  // A new sleeper bound to this clock. The clock must outlive it.
  virtual std::unique_ptr<Sleeper> NewSleeper() = 0;
};

// std::chrono::steady_clock, and a condition variable to sleep on.
// This class is thread-safe.
class RealClock final : public Clock {
 public:
  int64_t NowNanos() override { return MonotonicNanos(); }
  // CLOCK_MONOTONIC, which steady_clock reads, in nanoseconds: inline, so
  // that a caller that knows it has the real clock (the worker, in
  // newTimeout()) pays the vDSO call alone, without a virtual call and
  // libstdc++'s steady_clock::now() around it.
  static int64_t MonotonicNanos() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }
  std::unique_ptr<Sleeper> NewSleeper() override;

  // The process-wide instance used when TimerOptions::clock is empty.
  static std::shared_ptr<Clock> Shared();
};

}  // namespace tickwheel

#endif  // TICKWHEEL_WORKER_CLOCK_H_
