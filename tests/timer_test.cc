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
