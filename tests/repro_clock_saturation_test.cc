// tests/repro_clock_saturation_test.cc
// -----------------------------------------------------------------------------
// Reproducer: once the clock read INT64_MAX, a worker whose next tick end lay
// beyond INT64_MAX busy-spun forever. Fixed in 68f7a48 (a Sleeper deadline of
// INT64_MAX now means "until woken"); runs in //tests:fixed_repros_test.
//
// Worker::AwaitTickEnd() sleeps until SaturatingAdd(start_nanos_, tick_end).
// When that saturates to INT64_MAX and the clock already reads INT64_MAX (a
// ManualClock advanced by InfiniteDuration saturates there), SleepUntil()
// returns at once ("the clock reads at least the deadline"), `now < tick_end`
// still holds, and the loop repeats without end: 100% CPU, and
// ManualClock::AwaitIdle() never returns. stop() still works (Wake()).
//
// Fix: when start_nanos_ + tick_end overflows, the tick can never end on this
// clock: wait for Wake() only (e.g. loop on SleepUntil only while the clock is
// below INT64_MAX, else block until woken), or have the worker skip to
// shutdown-only waiting.

#include <chrono>
#include <future>
#include <memory>

#include <gtest/gtest.h>

#include "tickwheel/timer/timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace {

TEST(ReproClockSaturationTest, WorkerSettlesWhenTheClockSaturates) {
  auto clock = std::make_shared<ManualClock>(INT64_MAX - 1000);
  TimerOptions options;
  options.tick_duration = absl::Nanoseconds(10);
  options.ticks_per_wheel = 4;
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  ASSERT_TRUE(timer->newTimeout([](const Timeout&) {}, absl::Nanoseconds(5000)).ok());
  clock->Advance(absl::InfiniteDuration());  // saturates at INT64_MAX
  ASSERT_EQ(clock->NowNanos(), INT64_MAX);
  auto idle = std::async(std::launch::async, [&] { clock->AwaitIdle(); });
  // Settling takes microseconds; 5 s only bounds the failure.
  EXPECT_EQ(idle.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the worker never went back to sleep (spinning in AwaitTickEnd)";
  EXPECT_EQ(timer->stop().value().size(), 1u);  // wakes the worker either way
  idle.wait();
}

}  // namespace
}  // namespace tickwheel
