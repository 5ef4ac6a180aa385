// tests/timer_options_test.cc
// -----------------------------------------------------------------------------
// What Timer::Create() makes of TimerOptions. A tick or a wheel length it
// cannot honour is InvalidArgument, with a message that names the option and
// the value, and a failed Create() holds no instance-limit slot. What it
// accepts is reported back as it will be used: the wheel rounded up to a
// power of two, ticks below a millisecond kept as given, up to the largest
// tick * wheel that int64 nanoseconds hold.

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::StatusMentions;
using ::tickwheel::testing::Tick;

TEST(TimerOptionsTest, BadTickDurationIsInvalidArgument) {
  const int64_t live = LiveTimerCount();
  for (absl::Duration tick :
       {absl::ZeroDuration(), absl::Nanoseconds(-1), absl::Milliseconds(-1),
        absl::Milliseconds(-100), -absl::InfiniteDuration(),
        absl::Nanoseconds(0.5)}) {
    absl::StatusOr<std::unique_ptr<Timer>> r = Timer::Create(Tick(tick));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << absl::FormatDuration(tick);
    EXPECT_TRUE(StatusMentions(r.status(), "tick_duration")) << r.status();
  }
  // The message names the value that was given.
  absl::Status s = Timer::Create(Tick(absl::Milliseconds(-3))).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(StatusMentions(s, "-3ms")) << s;
  EXPECT_EQ(LiveTimerCount(), live) << "a failed Create() kept its slot";
}

TEST(TimerOptionsTest, TicksPerWheelOutOfRangeIsInvalidArgument) {
  const int64_t live = LiveTimerCount();
  for (int n : {0, -1, INT_MIN, (1 << 30) + 1, INT_MAX}) {
    absl::StatusOr<std::unique_ptr<Timer>> r =
        Timer::Create(Tick(absl::Milliseconds(1), n));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_TRUE(StatusMentions(r.status(), "ticks_per_wheel")) << r.status();
    EXPECT_TRUE(StatusMentions(r.status(), std::to_string(n))) << r.status();
  }
  EXPECT_EQ(LiveTimerCount(), live) << "a failed Create() kept its slot";
}

// Deadlines are int64 nanoseconds, so one turn of the wheel must be too.
TEST(TimerOptionsTest, TickTimesWheelOverflowIsInvalidArgument) {
  const int64_t live = LiveTimerCount();
  // 2^20 buckets of 10^13 ns overflow int64 nanoseconds (9.2e18).
  absl::Status s = Timer::Create(Tick(absl::Seconds(10000), 1 << 20)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(StatusMentions(s, "overflows")) << s;
  // An infinite tick is refused by the same rule, even with one bucket.
  EXPECT_EQ(Timer::Create(Tick(absl::InfiniteDuration(), 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Timer::Create(Tick(absl::InfiniteDuration())).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LiveTimerCount(), live) << "a failed Create() kept its slot";
}

TEST(TimerOptionsTest, WheelRoundsUpToAPowerOfTwoAndShortTicksAreKept) {
  for (auto [asked, got] :
       {std::pair{1, 1}, {3, 4}, {1000, 1024}, {4096, 4096}}) {
    auto timer = Timer::Create(Tick(absl::Milliseconds(1), asked));
    ASSERT_TRUE(timer.ok()) << timer.status();
    EXPECT_EQ((*timer)->ticksPerWheel(), got) << asked;
  }
  auto timer = Timer::Create(Tick(absl::Microseconds(100), 500)).value();
  EXPECT_EQ(timer->ticksPerWheel(), 512);
  EXPECT_EQ(timer->tickDuration(), absl::Microseconds(100));
  auto tiny = Timer::Create(Tick(absl::Nanoseconds(1), 1)).value();
  EXPECT_EQ(tiny->tickDuration(), absl::Nanoseconds(1));
  EXPECT_EQ(tiny->ticksPerWheel(), 1);
}

// tick * ticks_per_wheel = INT64_MAX ns exactly: allowed, and usable.
TEST(TimerOptionsTest, TickTimesWheelOfExactlyInt64MaxNanosecondsIsUsable) {
  auto clock = std::make_shared<ManualClock>();
  TimerOptions options = Tick(absl::Nanoseconds(INT64_MAX), 1);
  options.clock = clock;
  auto timer = Timer::Create(options).value();
  auto probe = std::make_shared<Probe>();
  ASSERT_TRUE(timer->newTimeout(ProbeTask(probe), absl::ZeroDuration()).ok());
  clock->AdvanceAndSettle(absl::Hours(24 * 365));
  EXPECT_EQ(probe->runs.load(), 0);  // the first tick ends in 292 years
  std::vector<Timeout> left = timer->stop().value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(left[0].takeTask() != nullptr);
}

}  // namespace
}  // namespace tickwheel
