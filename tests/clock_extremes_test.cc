// tests/clock_extremes_test.cc
// -----------------------------------------------------------------------------
// Clock readings at the ends of int64. A Clock chooses its own origin and only
// differences matter to the timer (timer/clock.h), so readings near INT64_MAX
// and below zero must work like any others:
//
//   * Deadlines are nanoseconds after startTime, and the worker sleeps until
//     SaturatingAdd(startTime, end of the tick of its next work)
//     (Worker::Sleep()). SaturatingAdd(a, b) (base/nanos.h) compares
//     a > INT64_MAX - b with b >= 0, which cannot overflow whatever the
//     reading a is, negative ones included.
//   * A tick end that the clock cannot express saturates to INT64_MAX, which
//     a Sleeper takes as "no deadline, until woken", even on a clock that
//     reads INT64_MAX (base/clock.h). A worker facing a tick that can
//     never end therefore sleeps instead of spinning, ManualClock::AwaitIdle()
//     sees it idle, and stop() still wakes it. What cannot be reached is kept,
//     never run, and returned by stop().
//   * ManualClock::Advance() saturates at INT64_MAX the same way
//     (now > INT64_MAX - step, step >= 0), so it moves normally from a
//     negative reading.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

// A clock that starts 1000 ns below INT64_MAX, with a 10 ns tick: a timeout
// 5 ns away runs at the first tick; one 5000 ns away lies beyond INT64_MAX,
// its tick end saturates, and it is kept, not run and not lost. The clock
// stops one nanosecond short of INT64_MAX here; the next test goes all the
// way.
TEST(ClockExtremesTest, DeadlinesBeyondInt64MaxAreKeptNotRun) {
  auto clock = std::make_shared<ManualClock>(INT64_MAX - 1000);
  TimerOptions options = Tick(absl::Nanoseconds(10), 4);
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  auto soon = std::make_shared<Probe>(), late = std::make_shared<Probe>();
  ASSERT_TRUE(timer->newTimeout(ProbeTask(soon), absl::Nanoseconds(5)).ok());
  ASSERT_TRUE(timer->newTimeout(ProbeTask(late), absl::Nanoseconds(5000)).ok());
  clock->AdvanceAndSettle(absl::Nanoseconds(10));
  EXPECT_EQ(soon->runs.load(), 1);
  clock->AdvanceAndSettle(absl::Nanoseconds(989));  // INT64_MAX - 1
  EXPECT_EQ(clock->NowNanos(), INT64_MAX - 1);
  EXPECT_EQ(late->runs.load(), 0);
  EXPECT_EQ(timer->stop().value().size(), 1u);
}

// The clock reads INT64_MAX (a ManualClock advanced by InfiniteDuration
// saturates there) and the only timeout's tick ends beyond it: the worker must
// go back to sleep until woken, not loop on a deadline that SleepUntil()
// reports as already reached. AwaitIdle() returning is the proof; it does
// within microseconds, and the generous bound only stops a spinning worker
// from hanging the test.
TEST(ClockExtremesTest, AClockAtInt64MaxNeverMakesTheWorkerSpin) {
  auto clock = std::make_shared<ManualClock>(INT64_MAX - 1000);
  TimerOptions options = Tick(absl::Nanoseconds(10), 4);
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  ASSERT_TRUE(
      timer->newTimeout([](const Timeout&) {}, absl::Nanoseconds(5000)).ok());
  clock->Advance(absl::InfiniteDuration());  // saturates at INT64_MAX
  ASSERT_EQ(clock->NowNanos(), INT64_MAX);
  auto idle = std::async(std::launch::async, [&] { clock->AwaitIdle(); });
  EXPECT_EQ(idle.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the worker never went back to sleep: it spins on a tick that cannot "
         "end";
  EXPECT_EQ(timer->stop().value().size(), 1u);  // wakes the worker either way
  idle.wait();
}

TEST(ClockExtremesTest, ManualClockAdvancesFromANegativeReading) {
  ManualClock clock(-1000);
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(clock.NowNanos(), -999);
}

// A ManualClock seen through a fixed negative offset, so that only the
// timer's arithmetic sees negative readings (the ManualClock itself stays at
// or above zero, and its AwaitIdle() works as usual).
class OffsetClock final : public Clock {
 public:
  OffsetClock(std::shared_ptr<ManualClock> inner, int64_t offset)
      : inner_(std::move(inner)), offset_(offset) {}
  int64_t NowNanos() override { return inner_->NowNanos() + offset_; }
  std::unique_ptr<Sleeper> NewSleeper() override {
    return std::make_unique<OffsetSleeper>(inner_->NewSleeper(), offset_);
  }

 private:
  class OffsetSleeper final : public Sleeper {
   public:
    OffsetSleeper(std::unique_ptr<Sleeper> inner, int64_t offset)
        : inner_(std::move(inner)), offset_(offset) {}
    void SleepUntil(int64_t deadline) override {
      // offset_ < 0: deadline - offset_ only overflows upwards, and INT64_MAX
      // ("until woken") stays INT64_MAX.
      inner_->SleepUntil(deadline > INT64_MAX + offset_ ? INT64_MAX
                                                        : deadline - offset_);
    }
    void Wake() override { inner_->Wake(); }

   private:
    std::unique_ptr<Sleeper> inner_;
    int64_t offset_;
  };

  std::shared_ptr<ManualClock> inner_;
  int64_t offset_;
};

// startTime is -1 s on this clock: the worker's tick ends and sleep deadlines
// are negative readings, and the task runs at the end of its tick as on any
// other clock.
TEST(ClockExtremesTest, ATimerOnANegativeClockRunsItsTasks) {
  auto manual = std::make_shared<ManualClock>(0);
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  options.clock = std::make_shared<OffsetClock>(manual, -1000000000);
  auto timer = Timer::Create(options).value();
  std::atomic<int> ran{0};
  ASSERT_TRUE(
      timer->newTimeout([&](const Timeout&) { ran++; }, absl::Milliseconds(10))
          .ok());
  manual->AdvanceAndSettle(absl::Milliseconds(20));
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace tickwheel
