// tests/slack_test.cc
// -----------------------------------------------------------------------------
// TimerOptions::slack, exactly, on a ManualClock: the default (one tick) runs
// tasks at tick ends as ever; a slack below the tick runs each task no
// earlier than its deadline and no later than deadline + slack, wakes the
// worker once per group of deadlines within the slack of each other, runs a
// tick's tasks in deadline order, honours reset() in both directions and
// periods below the tick and deadlines beyond one turn of the wheel, and
// still never wakes with nothing due.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::kUs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;

ManualTimer WithSlack(absl::Duration slack) {
  TimerOptions options = Tick(absl::Milliseconds(10), 512);
  options.slack = slack;
  return MakeManualTimer(std::move(options));
}

// Records (task id, clock reading) of every run, in run order.
class RunLog {
 public:
  explicit RunLog(std::shared_ptr<ManualClock> clock)
      : clock_(std::move(clock)) {}
  absl::AnyInvocable<void()> Task(int id) {
    return [this, id] {
      std::lock_guard<std::mutex> l(mu_);
      runs_.emplace_back(id, clock_->NowNanos());
    };
  }
  std::vector<std::pair<int, int64_t>> runs() {
    std::lock_guard<std::mutex> l(mu_);
    return runs_;
  }

 private:
  std::shared_ptr<ManualClock> clock_;
  std::mutex mu_;
  std::vector<std::pair<int, int64_t>> runs_;
};

using Runs = std::vector<std::pair<int, int64_t>>;

TEST(SlackTest, DefaultIsOneTickAndRunsAtTickEnds) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10), 64));
  EXPECT_EQ(t.timer->slack(), absl::Milliseconds(10));
  RunLog log(t.clock);
  ASSERT_TRUE(t.timer->newTimeout(log.Task(1), absl::Milliseconds(21)).ok());
  t.clock->AdvanceInSteps(absl::Milliseconds(29), absl::Milliseconds(1));
  EXPECT_TRUE(log.runs().empty());
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(log.runs(), (Runs{{1, 30 * kMs}}));
}

TEST(SlackTest, OptionsAreCheckedAndClamped) {
  TimerOptions negative = Tick(absl::Milliseconds(10));
  negative.slack = -absl::Nanoseconds(1);
  EXPECT_EQ(Timer::Create(negative).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Timer::CheckOptions(negative).code(),
            absl::StatusCode::kInvalidArgument);
  TimerOptions large = Tick(absl::Milliseconds(10));
  large.slack = absl::Seconds(1);
  EXPECT_EQ(Timer::Create(large).value()->slack(), absl::Milliseconds(10));
  large.slack = absl::InfiniteDuration();
  EXPECT_EQ(Timer::Create(large).value()->slack(), absl::Milliseconds(10));
  TimerOptions fraction = Tick(absl::Milliseconds(10));
  fraction.slack = absl::Nanoseconds(2.5);
  EXPECT_EQ(Timer::Create(fraction).value()->slack(), absl::Nanoseconds(2))
      << "rounded down, never later than asked";
}

TEST(SlackTest, ZeroSlackRunsAtTheDeadline) {
  ManualTimer t = WithSlack(absl::ZeroDuration());
  RunLog log(t.clock);
  ASSERT_TRUE(t.timer->newTimeout(log.Task(1), absl::Microseconds(21500)).ok());
  ASSERT_TRUE(t.timer->newTimeout(log.Task(2), absl::Milliseconds(3)).ok());
  t.clock->AdvanceAndSettle(absl::Nanoseconds(3 * kMs - 1));
  EXPECT_TRUE(log.runs().empty());
  t.clock->AdvanceAndSettle(absl::Nanoseconds(1));
  EXPECT_EQ(log.runs(), (Runs{{2, 3 * kMs}}));
  t.clock->AdvanceAndSettle(absl::Nanoseconds(18500 * kUs - 1));
  EXPECT_EQ(log.runs().size(), 1u) << "one nanosecond early";
  t.clock->AdvanceAndSettle(absl::Nanoseconds(1));
  EXPECT_EQ(log.runs(), (Runs{{2, 3 * kMs}, {1, 21500 * kUs}}));
  EXPECT_EQ(t.timer->metrics().lateness.max(), absl::ZeroDuration());
}

TEST(SlackTest, DeadlinesWithinTheSlackShareOneWakeup) {
  ManualTimer t = WithSlack(absl::Milliseconds(3));
  RunLog log(t.clock);
  // Two groups: 21, 22 and 23.5 ms (within 3 ms of 21), then 26 ms.
  const int64_t deadlines_us[] = {26000, 22000, 21000, 23500};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        t.timer->newTimeout(log.Task(i), absl::Microseconds(deadlines_us[i]))
            .ok());
  }
  // The tick in which the worker takes in new timeouts ends with a
  // housekeeping wake-up (it may take them in at its first wake-up, at
  // 10 ms, since none of them is due within the slack of its plan); count
  // from 20 ms.
  t.clock->AdvanceAndSettle(absl::Milliseconds(20));
  const int64_t wakeups_before = t.timer->metrics().wakeups;
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Microseconds(500));
  // Each group at its first deadline + 3 ms, in deadline order; 26 + 3 =
  // 29 ms comes before the tick's end at 30 ms.
  EXPECT_EQ(log.runs(),
            (Runs{{2, 24 * kMs}, {1, 24 * kMs}, {3, 24 * kMs}, {0, 29 * kMs}}));
  EXPECT_EQ(t.timer->metrics().wakeups - wakeups_before, 2)
      << "one wake-up per group, none while nothing is due";
}

// A deadline in the first tick of an upper bucket of the wheel (here tick
// 496, where a level-1 bucket of 8 ticks starts): the worker must wake when
// that bucket moves down, at the tick's start, not at its end, or the task
// runs up to a tick past its deadline whatever the slack.
TEST(SlackTest, DeadlinesBeyondOneTurnRunWithinTheSlack) {
  TimerOptions options = Tick(absl::Milliseconds(10), 8);
  options.slack = absl::ZeroDuration();
  ManualTimer t = MakeManualTimer(std::move(options));
  RunLog log(t.clock);
  ASSERT_TRUE(
      t.timer->newTimeout(log.Task(1), absl::Microseconds(4961500)).ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(4950));
  EXPECT_TRUE(log.runs().empty());
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Microseconds(100));
  EXPECT_EQ(log.runs(), (Runs{{1, 4961500 * kUs}}));
}

TEST(SlackTest, NeverEarlyNeverLaterThanTheSlackInDeadlineOrder) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4; ++round) {
    const int64_t slack = static_cast<int64_t>(rng() % (10 * kMs));
    ManualTimer t = WithSlack(absl::Nanoseconds(slack));
    RunLog log(t.clock);
    std::vector<int64_t> deadline;
    for (int i = 0; i < 300; ++i) {
      deadline.push_back(static_cast<int64_t>(rng() % (200 * kMs)));
      ASSERT_TRUE(
          t.timer->newTimeout(log.Task(i), absl::Nanoseconds(deadline[i]))
              .ok());
    }
    // Steps of random length; the worker settles after each.
    std::vector<int64_t> readings;
    while (t.clock->NowNanos() < 220 * kMs) {
      t.clock->AdvanceAndSettle(
          absl::Nanoseconds(1 + static_cast<int64_t>(rng() % (2 * kMs))));
      readings.push_back(t.clock->NowNanos());
    }
    const Runs runs = log.runs();
    ASSERT_EQ(runs.size(), deadline.size()) << "slack " << slack;
    for (size_t k = 0; k < runs.size(); ++k) {
      const auto [id, ran_at] = runs[k];
      EXPECT_GE(ran_at, deadline[id]) << "early; slack " << slack;
      // The first clock reading at or after deadline + slack.
      const int64_t latest = *std::lower_bound(readings.begin(), readings.end(),
                                               deadline[id] + slack);
      EXPECT_LE(ran_at, latest)
          << "later than the slack allows; slack " << slack;
      if (k > 0) {
        EXPECT_LE(deadline[runs[k - 1].first], deadline[id])
            << "not in deadline order; slack " << slack;
      }
    }
  }
}

TEST(SlackTest, ResetMovesTheWakeupBothWays) {
  ManualTimer t = WithSlack(absl::ZeroDuration());
  RunLog log(t.clock);
  Timeout later =
      t.timer->newTimeout(log.Task(1), absl::Milliseconds(21)).value();
  Timeout earlier =
      t.timer->newTimeout(log.Task(2), absl::Milliseconds(28)).value();
  t.clock->AwaitIdle();
  ASSERT_TRUE(later.reset(absl::Milliseconds(27)));    // later, same tick
  ASSERT_TRUE(earlier.reset(absl::Milliseconds(22)));  // earlier, same tick
  t.clock->AdvanceInSteps(absl::Milliseconds(30), absl::Microseconds(250));
  EXPECT_EQ(log.runs(), (Runs{{2, 22 * kMs}, {1, 27 * kMs}}));
}

TEST(SlackTest, AnEarlierNewTimeoutWakesTheWorker) {
  ManualTimer t = WithSlack(absl::ZeroDuration());
  RunLog log(t.clock);
  ASSERT_TRUE(t.timer->newTimeout(log.Task(1), absl::Milliseconds(28)).ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(20));
  ASSERT_TRUE(t.timer->newTimeout(log.Task(2), absl::Milliseconds(2)).ok());
  t.clock->AdvanceInSteps(absl::Milliseconds(10), absl::Microseconds(500));
  EXPECT_EQ(log.runs(), (Runs{{2, 22 * kMs}, {1, 28 * kMs}}));
}

TEST(SlackTest, PeriodsBelowTheTickRunOnTheirGrid) {
  ManualTimer t = WithSlack(absl::ZeroDuration());
  RunLog log(t.clock);
  Timeout p = t.timer
                  ->newPeriodic(log.Task(1), absl::Milliseconds(3),
                                absl::Milliseconds(3))
                  .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(25), absl::Microseconds(100));
  Runs expected;
  for (int k = 1; k <= 8; ++k) expected.emplace_back(1, 3 * k * kMs);
  EXPECT_EQ(log.runs(), expected);
  EXPECT_TRUE(p.cancel());
}

TEST(SlackTest, NothingDueMeansNoWakeups) {
  ManualTimer t = WithSlack(absl::ZeroDuration());
  RunLog log(t.clock);
  ASSERT_TRUE(t.timer->newTimeout(log.Task(1), absl::Seconds(2)).ok());
  // Housekeeping (as above) ends within a few ticks of taking the timeout
  // in, however the worker thread's start interleaves with newTimeout().
  t.clock->AdvanceInSteps(absl::Milliseconds(100), absl::Milliseconds(1));
  const int64_t before = t.timer->metrics().wakeups;
  t.clock->AdvanceInSteps(absl::Milliseconds(1899), absl::Milliseconds(1));
  EXPECT_EQ(t.timer->metrics().wakeups, before);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(log.runs(), (Runs{{1, 2000 * kMs}}));
  EXPECT_EQ(t.timer->metrics().wakeups, before + 1);
}

}  // namespace
}  // namespace tickwheel
