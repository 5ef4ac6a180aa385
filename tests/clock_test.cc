// tests/clock_test.cc
// -----------------------------------------------------------------------------
// The two Clocks. ManualClock: time moves only when told (saturating at
// INT64_MAX), sleepers wake at their deadline or on Wake(), and AwaitIdle()
// waits for every sleeper. RealClock: its inline reading is steady_clock's.
// (Readings below zero, and a Timer on readings at either end of int64, are
// in clock_extremes_test.)

#include "tickwheel/timer/manual_clock.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tickwheel/timer/clock.h"

namespace tickwheel {
namespace {

TEST(ManualClockTest, MovesOnlyWhenAdvanced) {
  ManualClock clock(100);
  EXPECT_EQ(clock.NowNanos(), 100);
  clock.Advance(absl::Nanoseconds(5));
  EXPECT_EQ(clock.NowNanos(), 105);
  clock.Advance(absl::Nanoseconds(-50));  // negative counts as zero
  EXPECT_EQ(clock.NowNanos(), 105);
  clock.Advance(absl::InfiniteDuration());  // saturates
  EXPECT_EQ(clock.NowNanos(), INT64_MAX);
}

TEST(ManualClockTest, SleeperWakesAtDeadline) {
  ManualClock clock;
  auto sleeper = clock.NewSleeper();
  std::atomic<int> wakeups{0};
  std::thread t([&] {
    while (clock.NowNanos() < 1000) {
      sleeper->SleepUntil(1000);
      wakeups.fetch_add(1);
    }
  });
  clock.AwaitIdle();  // asleep with a deadline in the future
  EXPECT_EQ(wakeups.load(), 0);
  clock.Advance(absl::Nanoseconds(999));
  clock.AwaitIdle();
  clock.Advance(absl::Nanoseconds(1));
  t.join();
  EXPECT_GE(wakeups.load(), 1);
}

TEST(ManualClockTest, WakeIsNotLostWhenItComesFirst) {
  ManualClock clock;
  auto sleeper = clock.NewSleeper();
  sleeper->Wake();
  sleeper->SleepUntil(1 << 30);  // returns at once: the Wake() is pending
  EXPECT_EQ(clock.NowNanos(), 0);
}

TEST(ManualClockTest, AwaitIdleWithoutSleepersReturns) {
  ManualClock clock;
  EXPECT_EQ(clock.SleeperCount(), 0);
  clock.AdvanceAndSettle(absl::Seconds(1));
  EXPECT_EQ(clock.NowNanos(), 1000000000);
}

TEST(ManualClockTest, AdvanceInStepsVisitsEveryStep) {
  ManualClock clock;
  auto sleeper = clock.NewSleeper();
  std::atomic<int64_t> observed_sum{0};
  std::atomic<bool> done{false};
  std::thread t([&] {
    int64_t next = 10;
    while (!done.load()) {
      sleeper->SleepUntil(next);
      if (clock.NowNanos() >= next) {
        observed_sum.fetch_add(clock.NowNanos());
        next = clock.NowNanos() + 10;
      }
    }
  });
  clock.AdvanceInSteps(absl::Nanoseconds(50), absl::Nanoseconds(10));
  done.store(true);
  sleeper->Wake();
  t.join();
  EXPECT_EQ(observed_sum.load(), 10 + 20 + 30 + 40 + 50);
}

TEST(RealClockTest, MonotonicNanosReadsSteadyClock) {
  // The worker reads RealClock::MonotonicNanos() inline in newTimeout() and
  // sleeps on steady_clock: they must be one clock.
  RealClock clock;
  for (int i = 0; i < 1000; ++i) {
    const int64_t before =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
    const int64_t mid = RealClock::MonotonicNanos();
    const int64_t virt = clock.NowNanos();
    const int64_t after =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
    ASSERT_LE(before, mid);
    ASSERT_LE(mid, virt);
    ASSERT_LE(virt, after);
  }
}

}  // namespace
}  // namespace tickwheel
