#include <atomic>
#include <gtest/gtest.h>
#include "timer/timer.h"
#include "worker/manual_clock.h"
using namespace tickwheel;
TEST(Sanity, Real) {
  auto timer = Timer::Create({.tick_duration = absl::Milliseconds(1)}).value();
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(timer->newTimeout([&](const Timeout&) { ran++; }, absl::Milliseconds(i % 20)).ok());
  auto c = timer->newTimeout([&](const Timeout&) { ran += 1000; }, absl::Milliseconds(5)).value();
  EXPECT_TRUE(c.cancel());
  auto far = timer->newTimeout([&](const Timeout&) { ran += 1000; }, absl::Hours(1)).value();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(ran.load(), 100);
  auto left = timer->stop().value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(left[0] == far);
  EXPECT_TRUE(far.isCancelled());
  EXPECT_TRUE(far.takeTask() != nullptr);
  fmt::print("{}\n", timer->metrics());
}
TEST(Sanity, Manual) {
  auto clock = std::make_shared<ManualClock>();
  auto timer = Timer::Create({.tick_duration = absl::Milliseconds(10), .ticks_per_wheel = 4, .clock = clock}).value();
  std::vector<int64_t> at;
  for (int d : {0, 5, 10, 11, 39, 40, 41, 100, 1000})
    timer->newTimeout([&, d](const Timeout&) { at.push_back(clock->NowNanos() / 1000000); }, absl::Milliseconds(d)).value();
  clock->AdvanceInSteps(absl::Seconds(2), absl::Milliseconds(10));
  EXPECT_EQ(at, (std::vector<int64_t>{10, 10, 10, 20, 40, 40, 50, 100, 1000}));
}
