// tests/metrics_test.cc
// -----------------------------------------------------------------------------
// TimerMetrics as text: fmt formats it exactly as ToString() does, with each
// counter named. (What the counters count is checked where each behaviour is:
// expiries in scheduling_test, catch-up ticks and lateness in catch_up_test,
// wake-ups in timer_wakeup_test, cancels in cancel_test.)

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Tick;

TEST(MetricsTest, MetricsFormatWithFmtAsToString) {
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
