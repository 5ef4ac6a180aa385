// The few tests that use the real clock. They check ordering properties that
// must hold however slow the machine is (never early), and bound lateness only
// by a generous margin: precise timing is the benchmark's job.

#include <atomic>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::Tick;
using ::tickwheel::testing::WaitUntil;

// Generous: the machine is shared and may stall a thread for a long time.
constexpr absl::Duration kGenerousBound = absl::Seconds(5);

TEST(TimerRealtimeTest, NeverEarlyOnTheRealClock) {
  auto timer = Timer::Create(Tick(absl::Milliseconds(2), 16)).value();
  constexpr int kCount = 200;
  std::vector<int64_t> scheduled_at(kCount), delay(kCount);
  std::vector<std::atomic<int64_t>> ran_at(kCount);
  auto clock = RealClock::Shared();
  for (int i = 0; i < kCount; ++i) {
    delay[i] = (i % 40) * 1000000;  // 0..39 ms
    scheduled_at[i] = clock->NowNanos();
    timer
        ->newTimeout(
            [&, i](const Timeout&) { ran_at[i].store(clock->NowNanos()); },
            absl::Nanoseconds(delay[i]))
        .value();
  }
  WaitUntil([&] { return timer->pendingTimeouts() == 0; }, kGenerousBound);
  ASSERT_EQ(timer->pendingTimeouts(), 0);
  ASSERT_TRUE(timer->stop().ok());  // joins: every ran_at store is visible
  for (int i = 0; i < kCount; ++i) {
    EXPECT_GE(ran_at[i].load(), scheduled_at[i] + delay[i]) << "task " << i;
  }
}

TEST(TimerRealtimeTest, SlowTaskMakesLaterOnesCatchUpInOrderNoneEarly) {
  auto timer = Timer::Create(Tick(absl::Milliseconds(1), 8)).value();
  std::vector<int> order;  // worker-only until stop() joins
  std::vector<int64_t> late_by;
  auto clock = RealClock::Shared();
  const int64_t start = clock->NowNanos();
  timer
      ->newTimeout(
          [](const Timeout&) { absl::SleepFor(absl::Milliseconds(30)); },
          absl::Milliseconds(1))
      .value();
  for (int i = 1; i <= 5; ++i) {
    timer
        ->newTimeout(
            [&, i](const Timeout&) {
              order.push_back(i);
              late_by.push_back(clock->NowNanos() - start - i * 4000000);
            },
            absl::Milliseconds(i * 4))
        .value();
  }
  WaitUntil([&] { return timer->pendingTimeouts() == 0; }, kGenerousBound);
  ASSERT_TRUE(timer->stop().ok());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
  for (int64_t l : late_by) EXPECT_GE(l, 0);
  EXPECT_GT(timer->metrics().catch_up_ticks, 0);
}

}  // namespace
}  // namespace tickwheel
