// tests/chrono_edges_test.cc
// -----------------------------------------------------------------------------
// Delays, periods and deadlines at the edges of what std::chrono can say, on
// a ManualClock, through every entry point: a huge delay of an odd period
// saturates instead of running at once, a NaN is refused, an infinite period
// is refused while a period below 1 ns is rounded up, durations of mixed
// types are accepted, and a deadline in the past (TimePoint::min() among
// them) is taken as now, so a periodic timeout's grid and the lateness it
// records measure from the call. Run under UBSan in CI: none of this may
// overflow.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <ratio>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;
using Sixtieths = std::chrono::duration<int64_t, std::ratio<1, 60>>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Not a constant: the conversion must hold at run time, not fold away.
int64_t Huge() {
  static volatile int64_t huge = kMax / 2;
  return huge;
}

TEST(ChronoEdgesTest, HugeDelaysOfAnOddPeriodSaturateAndNeverRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto ran = std::make_shared<std::atomic<int>>(0);
  Timeout timeout =
      t.timer->newTimeout([ran] { ++*ran; }, Sixtieths(Huge())).value();
  EXPECT_EQ(DeadlineNanos(timeout), kMax);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(ran->load(), 0);
  EXPECT_TRUE(timeout.reset(Sixtieths(Huge())));
  EXPECT_EQ(DeadlineNanos(timeout), kMax);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(ran->load(), 0);
  // A periodic timeout with a huge period of an odd type is accepted, and
  // waits that long after its first run.
  Timeout periodic =
      t.timer
          ->newPeriodic([ran] { ++*ran; }, std::chrono::milliseconds(1),
                        Sixtieths(Huge()))
          .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(ran->load(), 1);
  EXPECT_EQ(DeadlineNanos(periodic), kMax);
}

TEST(ChronoEdgesTest, NanIsRefusedEverywhere) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  const std::chrono::duration<double> nan(std::nan(""));
  EXPECT_EQ(t.timer->newTimeout([] {}, nan).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer->newTimeout(TimerTask([](const Timeout&) {}), nan)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      t.timer->newPeriodic([] {}, nan, std::chrono::seconds(1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      t.timer->newPeriodic([] {}, std::chrono::seconds(1), nan).status().code(),
      absl::StatusCode::kInvalidArgument);
  Timeout timeout = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  EXPECT_FALSE(timeout.reset(nan));
  EXPECT_EQ(DeadlineNanos(timeout), 1'000'000'000);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
}

TEST(ChronoEdgesTest, InfinitePeriodsAreRefusedAndSubNanosecondOnesRoundUp) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  const std::chrono::duration<double> inf(
      std::numeric_limits<double>::infinity());
  EXPECT_EQ(
      t.timer->newPeriodic([] {}, absl::ZeroDuration(), inf).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      t.timer->newPeriodic([] {}, absl::ZeroDuration(), -inf).status().code(),
      absl::StatusCode::kInvalidArgument);
  // Half a nanosecond, either way it is written: one nanosecond.
  EXPECT_TRUE(t.timer
                  ->newPeriodic([] {}, absl::Seconds(1),
                                std::chrono::duration<double, std::nano>(0.5))
                  .ok());
  EXPECT_TRUE(
      t.timer->newPeriodic([] {}, absl::Seconds(1), absl::Nanoseconds(1) / 2)
          .ok());
  // An infinite delay is a timeout that never comes, not an error.
  Timeout never = t.timer->newTimeout([] {}, inf).value();
  EXPECT_EQ(DeadlineNanos(never), kMax);
}

TEST(ChronoEdgesTest, MixedDurationTypesAreAccepted) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  using namespace std::chrono_literals;
  Timeout a = t.timer->newPeriodic([] {}, 500ms, absl::Seconds(1)).value();
  Timeout b = t.timer->newPeriodic([] {}, absl::Milliseconds(250), 2s).value();
  EXPECT_EQ(DeadlineNanos(a), 500'000'000);
  EXPECT_EQ(DeadlineNanos(b), 250'000'000);
}

TEST(ChronoEdgesTest, DeadlinesInThePastAreTakenAsNow) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  t.clock->Advance(absl::Seconds(5));
  const TimePoint now = t.timer->now();
  Timeout at_min = t.timer->newTimeoutAt([] {}, TimePoint::min()).value();
  EXPECT_EQ(at_min.deadline(), now);
  Timeout later = t.timer->newTimeout([] {}, absl::Seconds(10)).value();
  EXPECT_TRUE(later.resetAt(TimePoint::min()));
  EXPECT_EQ(later.deadline(), now);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  EXPECT_TRUE(at_min.isExpired());
  EXPECT_TRUE(later.isExpired());
  // Lateness is measured from the call, not from the distant past.
  EXPECT_LE(t.timer->metrics().worst_lateness, absl::Milliseconds(2));
}

TEST(ChronoEdgesTest, PeriodicResetToTheMinimumTimePointStaysOnAGridFromNow) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  t.clock->Advance(absl::Seconds(1));
  auto runs = std::make_shared<std::atomic<int>>(0);
  Timeout periodic = t.timer
                         ->newPeriodic([runs] { ++*runs; }, absl::Seconds(10),
                                       absl::Milliseconds(5))
                         .value();
  EXPECT_TRUE(periodic.resetAt(TimePoint::min()));
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(runs->load(), 1);
  // The next run is one period after the reset, on the clock's scale.
  EXPECT_EQ(periodic.deadline(), TimePoint(std::chrono::milliseconds(1005)));
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  EXPECT_EQ(runs->load(), 5);
  const TimerMetrics m = t.timer->metrics();
  EXPECT_LE(m.worst_lateness, absl::Milliseconds(1));
  EXPECT_LE(m.lateness.max(), absl::Milliseconds(1));
  // A deadline at the far end never comes and never wraps.
  EXPECT_TRUE(periodic.resetAt(TimePoint::max()));
  t.clock->AdvanceAndSettle(absl::Milliseconds(20));
  EXPECT_EQ(runs->load(), 5);
  EXPECT_TRUE(periodic.cancel());
}

}  // namespace
}  // namespace tickwheel
