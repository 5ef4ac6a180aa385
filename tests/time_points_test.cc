// tests/time_points_test.cc
// -----------------------------------------------------------------------------
// Absolute deadlines: Timer::now() on the timer's clock, newTimeoutAt(),
// Timeout::deadline(), and delays given as any std::chrono::duration.

#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(TimePointsTest, NowIsTheTimersClock) {
  auto real = Timer::Create().value();
  const TimePoint before = std::chrono::steady_clock::now();
  const TimePoint now = real->now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, std::chrono::steady_clock::now());

  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  EXPECT_EQ(t.timer->now().time_since_epoch().count(), 0);
  t.clock->Advance(absl::Milliseconds(42));
  EXPECT_EQ(t.timer->now(), TimePoint(std::chrono::milliseconds(42)));
}

TEST(TimePointsTest, NewTimeoutAtRunsAtItsDeadlineNeverBefore) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  const TimePoint at = t.timer->now() + std::chrono::milliseconds(7);
  Timeout timeout =
      t.timer->newTimeoutAt(ProbeTask(probe, t.clock), at).value();
  EXPECT_EQ(timeout.deadline(), at);
  t.clock->AdvanceInSteps(absl::Milliseconds(6), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(probe->ran_at_nanos.load(), 7 * kMs);
}

TEST(TimePointsTest, NewTimeoutAtInThePastRunsPromptly) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  t.clock->Advance(absl::Seconds(5));
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeoutAt(ProbeTask(probe), TimePoint{}).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
}

TEST(TimePointsTest, DeadlineOfAHandleOutlivesItsTimer) {
  Timeout timeout;
  TimePoint at;
  {
    ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
    timeout = t.timer->newTimeout([] {}, absl::Seconds(3)).value();
    at = timeout.deadline();
    EXPECT_EQ(at, TimePoint(std::chrono::seconds(3)));
  }
  EXPECT_EQ(timeout.deadline(), at);
  EXPECT_TRUE(timeout.isCancelled());  // destroyed by ~Timer, never run
}

TEST(TimePointsTest, AnyChronoDurationIsADelay) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  using std::chrono::duration;
  EXPECT_EQ(
      t.timer->newTimeout([] {}, duration<double>(0.5)).value().deadline(),
      TimePoint(std::chrono::milliseconds(500)));
  EXPECT_EQ(t.timer->newTimeout([] {}, duration<int, std::milli>(250))
                .value()
                .deadline(),
            TimePoint(std::chrono::milliseconds(250)));
  EXPECT_EQ(t.timer->newTimeout([] {}, std::chrono::days(1)).value().deadline(),
            TimePoint(std::chrono::hours(24)));
  EXPECT_EQ(t.timer->newTimeout([] {}, duration<float, std::micro>(1.5f))
                .value()
                .deadline(),
            TimePoint(std::chrono::nanoseconds(1500)));
  // Saturates, never wraps into the past.
  EXPECT_EQ(t.timer->newTimeout([] {}, std::chrono::years(1000000))
                .value()
                .deadline()
                .time_since_epoch()
                .count(),
            INT64_MAX);
  EXPECT_EQ(
      t.timer->newTimeout([] {}, duration<double>(-1e300)).value().deadline(),
      TimePoint{});  // negative: now
  EXPECT_EQ(t.timer
                ->newPeriodic([] {}, duration<double>(0.25),
                              std::chrono::milliseconds(100))
                .value()
                .deadline(),
            TimePoint(std::chrono::milliseconds(250)));
}

}  // namespace
}  // namespace tickwheel
