// Timer behaviour on a ManualClock: options, error codes, scheduling
// arithmetic (never early, within one tick, rounds), cancellation and the
// max-pending limit. Every wait is AwaitIdle(), so nothing here depends on the
// machine's speed.

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

constexpr int64_t kMs = 1000000;

TEST(TimerTest, WorkerCatchesUpMissedTicksInOrder) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  std::vector<int> order;  // written by the worker only
  for (int i : {7, 3, 9, 1, 5}) {
    t.timer
        ->newTimeout([&order, i](const Timeout&) { order.push_back(i); },
                     absl::Milliseconds(i * 30))
        .value();
  }
  t.clock->AdvanceAndSettle(absl::Seconds(1));  // one jump over 100 ticks
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5, 7, 9}));
  const TimerMetrics m = t.timer->metrics();
  EXPECT_EQ(m.ticks, 100);
  EXPECT_EQ(m.catch_up_ticks, 5);  // the five ticks that had work
  EXPECT_GE(m.worst_lateness, absl::Milliseconds(700));
}

TEST(TimerTest, MetricsFormatWithFmt) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  t.timer->newTimeout([](const Timeout&) {}, absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  const std::string text = fmt::format("{}", t.timer->metrics());
  EXPECT_NE(text.find("expired=1"), std::string::npos) << text;
  EXPECT_NE(text.find("ticks=1"), std::string::npos) << text;
  EXPECT_EQ(text, t.timer->metrics().ToString());
}

}  // namespace
}  // namespace tickwheel
