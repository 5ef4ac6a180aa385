// tests/local_timer_test.cc
// -----------------------------------------------------------------------------
// LocalTimer, scheduling and running: advance() runs what is due in deadline
// order and never early; what a task schedules waits for a later advance();
// nextWakeup() and pollTimeoutMs() name the next run time (rounded up, 0
// when due, -1 when none); a throwing task is logged and the rest run; the
// task shapes, options and errors are Timer's. On a ManualClock, so every
// time is exact.

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;
using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::kUs;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::LogTask;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::RunLog;
using ::tickwheel::testing::StatusMentions;

TimePoint At(int64_t nanos) {
  return TimePoint(std::chrono::nanoseconds(nanos));
}

// Deadlines spread over several ticks and within them, scheduled out of
// order, with a tie: one advance() past all of them runs them by deadline,
// the tie in the order scheduled. With the default slack (one tick) and
// with none.
TEST(LocalTimerTest, OneAdvanceRunsWhatIsDueInDeadlineOrder) {
  for (std::optional<absl::Duration> slack :
       {std::optional<absl::Duration>(), std::optional(absl::ZeroDuration())}) {
    ManualLocalTimer t = MakeLocalTimer(LocalOptions(slack));
    RunLog log;
    const int64_t deadlines[] = {3700 * kUs, 3200 * kUs, 1500 * kUs,
                                 3200 * kUs, 9 * kMs,    2 * kMs};
    for (int i = 0; i < 6; ++i) {
      t.timer->newTimeoutAt(LogTask(&log, i, t.clock), At(deadlines[i]))
          .value();
    }
    EXPECT_EQ(t.AdvanceTo(20 * kMs), 6);
    EXPECT_EQ(log.Ids(), (std::vector<int>{2, 5, 1, 3, 0, 4}));
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  }
}

// Every deadline in a fine grid, the clock moved in steps that do not
// divide the tick: each task runs at the first advance() at or after its
// run time (its deadline with no slack, its tick's end with the default),
// never before its deadline.
TEST(LocalTimerTest, NeverEarlyAndNoLaterThanItsRunTime) {
  for (std::optional<absl::Duration> slack :
       {std::optional<absl::Duration>(), std::optional(absl::ZeroDuration())}) {
    ManualLocalTimer t = MakeLocalTimer(LocalOptions(slack));
    RunLog log;
    std::vector<int64_t> deadlines;
    for (int i = 0; i < 200; ++i) {
      deadlines.push_back(37 * kUs * (i + 1));  // up to 7.4 ms
      t.timer->newTimeoutAt(LogTask(&log, i, t.clock), At(deadlines.back()))
          .value();
    }
    constexpr int64_t kStep = 130 * kUs;
    for (int64_t now = 0; now <= 10 * kMs; now += kStep) t.AdvanceTo(now);
    ASSERT_EQ(log.runs.size(), 200u);
    for (const RunLog::Run& r : log.runs) {
      const int64_t deadline = deadlines[r.id];
      const int64_t run_time =
          slack.has_value() ? deadline : (deadline + kMs - 1) / kMs * kMs;
      EXPECT_GE(r.at, deadline) << "task " << r.id;
      EXPECT_GE(r.at, run_time) << "task " << r.id;
      EXPECT_LT(r.at, run_time + kStep) << "task " << r.id;
    }
  }
}

// A task that schedules a timeout already due (delay zero, a deadline in the
// past): it is filed, not run in the same advance(); the next advance()
// whose clock reaches its run time runs it.
TEST(LocalTimerTest, WhatATaskSchedulesRunsInALaterAdvance) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  RunLog log;
  LocalTimer* timer = t.timer.get();
  t.timer
      ->newTimeout(
          [&](const Timeout&) {
            log.runs.push_back({0, t.NowNanos()});
            timer->newTimeout(LogTask(&log, 1, t.clock), absl::ZeroDuration())
                .value();
            timer->newTimeoutAt(LogTask(&log, 2, t.clock), At(0)).value();
            EXPECT_EQ(timer->pendingTimeouts(), 2);
          },
          absl::Milliseconds(2))
      .value();
  EXPECT_EQ(t.AdvanceTo(2 * kMs), 1);
  EXPECT_EQ(log.Ids(), (std::vector<int>{0}));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 0);  // due now
  EXPECT_EQ(t.timer->advance(), 2);        // same clock reading
  EXPECT_EQ(log.Ids(), (std::vector<int>{0, 1, 2}));
}

// The same with the default slack: the nested timeout runs at the end of
// the tick in progress, as a Timer's does.
TEST(LocalTimerTest, WhatATaskSchedulesWaitsForTheTickEndByDefault) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  RunLog log;
  LocalTimer* timer = t.timer.get();
  t.timer
      ->newTimeout(
          [&] {
            timer->newTimeout(LogTask(&log, 1, t.clock), absl::ZeroDuration())
                .value();
          },
          absl::Milliseconds(2))
      .value();
  EXPECT_EQ(t.AdvanceTo(2 * kMs), 1);
  EXPECT_EQ(t.timer->advance(), 0);
  EXPECT_EQ(t.timer->nextWakeup(), At(3 * kMs));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 1);
  EXPECT_EQ(t.AdvanceTo(3 * kMs), 1);
  EXPECT_EQ(log.runs.at(0).at, 3 * kMs);
}

// pollTimeoutMs(): -1 with nothing pending; the milliseconds until
// nextWakeup(), rounded up; 0 once it has come.
TEST(LocalTimerTest, PollTimeoutRoundsUpIsZeroWhenDueAndMinusOneWhenNone) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  EXPECT_EQ(t.timer->nextWakeup(), std::nullopt);
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
  t.timer->newTimeout([] {}, absl::Microseconds(2500)).value();
  EXPECT_EQ(t.timer->nextWakeup(), At(2500 * kUs));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 3);  // 2.5 ms, rounded up
  t.AdvanceTo(2 * kMs);
  EXPECT_EQ(t.timer->pollTimeoutMs(), 1);  // 0.5 ms
  t.AdvanceTo(2500 * kUs - 1);
  EXPECT_EQ(t.timer->pollTimeoutMs(), 1);  // 1 ns
  t.clock->Advance(absl::Nanoseconds(1));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 0);
  t.clock->Advance(absl::Milliseconds(5));
  EXPECT_EQ(t.timer->pollTimeoutMs(), 0);  // late is still due
  EXPECT_EQ(t.timer->advance(), 1);
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
}

// With the default slack the wake-up is the end of the deadline's tick; with
// a slack below the tick, the earliest deadline plus the slack, so that
// deadlines within the slack share one wake-up.
TEST(LocalTimerTest, NextWakeupIsTheRunTimeOfTheEarliestTimeout) {
  ManualLocalTimer ticks = MakeLocalTimer(LocalOptions());
  ticks.timer->newTimeout([] {}, absl::Microseconds(1500)).value();
  EXPECT_EQ(ticks.timer->nextWakeup(), At(2 * kMs));
  EXPECT_EQ(ticks.timer->pollTimeoutMs(), 2);

  ManualLocalTimer slack =
      MakeLocalTimer(LocalOptions(absl::Microseconds(300)));
  slack.timer->newTimeout([] {}, absl::Microseconds(1500)).value();
  slack.timer->newTimeout([] {}, absl::Microseconds(1700)).value();
  EXPECT_EQ(slack.timer->nextWakeup(), At(1800 * kUs));
  EXPECT_EQ(slack.AdvanceTo(1800 * kUs), 2);
  EXPECT_EQ(slack.timer->nextWakeup(), std::nullopt);
}

// A deadline beyond one turn of the wheel: nextWakeup() may come earlier
// (the wheel moves it down a level), never later, and a loop that follows
// it runs the task at its run time after a few empty advances.
TEST(LocalTimerTest, FarDeadlinesAreNeverWokenForLate) {
  LocalTimerOptions options = LocalOptions(absl::ZeroDuration());
  options.ticks_per_wheel = 8;
  ManualLocalTimer t = MakeLocalTimer(options);
  RunLog log;
  const int64_t deadline = 5000 * kMs + 123 * kUs;
  t.timer->newTimeoutAt(LogTask(&log, 0, t.clock), At(deadline)).value();
  int wakeups = 0;
  while (log.runs.empty() && wakeups < 100) {
    const std::optional<TimePoint> wake = t.timer->nextWakeup();
    ASSERT_TRUE(wake.has_value());
    const int64_t wake_nanos =
        std::chrono::nanoseconds(wake->time_since_epoch()).count();
    ASSERT_LE(wake_nanos, deadline);
    t.AdvanceTo(wake_nanos);
    ++wakeups;
  }
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].at, deadline);
  EXPECT_LE(wakeups, 10);  // one per level at most, and the run
}

// nextWakeup() may come before the run time of a far timeout, which moves
// down a level of the wheel first, in an advance() that runs nothing: at
// most once per level above the first that it starts in, and it still runs
// at its run time. 1 ms tick, 8 buckets: level 1's buckets span 8 ticks,
// level 2's 512, level 3's 32768. With the default slack and with none.
TEST(LocalTimerTest, AFarDeadlineWakesEarlyAtMostOncePerLevel) {
  struct Far {
    int64_t deadline;
    int level;  // where it is filed at first
  };
  const Far fars[] = {{5 * kMs + 123 * kUs, 0},
                      {50 * kMs + 123 * kUs, 1},
                      {5000 * kMs + 123 * kUs, 2},
                      {400'000 * kMs + 123 * kUs, 3}};
  for (const std::optional<absl::Duration> slack :
       {std::optional<absl::Duration>(),
        std::optional<absl::Duration>(absl::ZeroDuration())}) {
    for (const Far& far : fars) {
      SCOPED_TRACE(::testing::Message() << "deadline " << far.deadline
                                        << " slack " << slack.has_value());
      LocalTimerOptions options = LocalOptions(slack);
      options.ticks_per_wheel = 8;
      ManualLocalTimer t = MakeLocalTimer(options);
      RunLog log;
      t.timer->newTimeoutAt(LogTask(&log, 0, t.clock), At(far.deadline))
          .value();
      const int64_t run_time =
          slack.has_value() ? far.deadline : (far.deadline / kMs + 1) * kMs;
      int early = 0;
      for (int wakeups = 0; log.runs.empty() && wakeups < 100; ++wakeups) {
        const std::optional<TimePoint> wake = t.timer->nextWakeup();
        ASSERT_TRUE(wake.has_value());
        const int64_t wake_nanos =
            std::chrono::nanoseconds(wake->time_since_epoch()).count();
        ASSERT_LE(wake_nanos, run_time);
        if (t.AdvanceTo(wake_nanos) == 0) ++early;
      }
      ASSERT_EQ(log.runs.size(), 1u);
      EXPECT_EQ(log.runs[0].at, run_time);
      EXPECT_LE(early, far.level);
    }
  }
}

// A timeout cancelled from the owner thread no longer counts for the plan.
TEST(LocalTimerTest, CancelledTimeoutsLeaveThePlan) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  Timeout early = t.timer->newTimeout([] {}, absl::Milliseconds(1)).value();
  t.timer->newTimeout([] {}, absl::Milliseconds(7)).value();
  EXPECT_EQ(t.timer->nextWakeup(), At(1 * kMs));
  EXPECT_TRUE(early.cancel());
  EXPECT_EQ(t.timer->nextWakeup(), At(7 * kMs));
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
}

// A task that throws is logged, and advance() goes on with the next.
TEST(LocalTimerTest, AThrowingTaskIsLoggedAndTheRestRun) {
  CapturedLog captured;
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  RunLog log;
  t.timer
      ->newTimeout([] { throw std::runtime_error("boom"); },
                   absl::Milliseconds(1))
      .value();
  t.timer->newTimeout(LogTask(&log, 1, t.clock), absl::Milliseconds(1)).value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 2);
  EXPECT_EQ(log.Ids(), (std::vector<int>{1}));
  const std::vector<std::string> messages = captured.messages();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("boom"), std::string::npos) << messages[0];
}

void PlainFunction() {}

// The task shapes and conversions of Timer: with or without the Timeout, a
// function, a TimerTask, chrono delays; an empty task and a NaN are refused;
// a task's Timeout names no Timer.
TEST(LocalTimerTest, TakesTimersTaskShapesAndRefusesTheSameArguments) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  int runs = 0;
  bool saw_null_timer = false;
  t.timer
      ->newTimeout(
          [&](const Timeout& self) {
            ++runs;
            saw_null_timer = self.timer() == nullptr;
          },
          std::chrono::microseconds(500))
      .value();
  t.timer->newTimeout([&] { ++runs; }, absl::Milliseconds(1)).value();
  t.timer
      ->newTimeout(PlainFunction,
                   std::chrono::duration<double, std::milli>(0.5))
      .value();
  t.timer
      ->newTimeout(TimerTask([&](const Timeout&) { ++runs; }),
                   absl::Milliseconds(1))
      .value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 4);
  EXPECT_EQ(runs, 3);
  EXPECT_TRUE(saw_null_timer);

  absl::Status empty =
      t.timer->newTimeout(std::function<void()>(), absl::Seconds(1)).status();
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  absl::Status nan =
      t.timer->newTimeout([] {}, std::chrono::duration<double>(std::nan("")))
          .status();
  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StatusMentions(nan, "NaN")) << nan;
  absl::Status period =
      t.timer->newPeriodic([] {}, absl::ZeroDuration(), absl::ZeroDuration())
          .status();
  EXPECT_EQ(period.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// Deadlines: a delay from now, an absolute one; a past one is taken as now;
// a huge delay saturates and is never due.
TEST(LocalTimerTest, DeadlinesCountFromNowAndSaturate) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  t.clock->Advance(absl::Milliseconds(10));
  Timeout delay = t.timer->newTimeout([] {}, absl::Milliseconds(5)).value();
  Timeout past = t.timer->newTimeoutAt([] {}, At(1 * kMs)).value();
  Timeout never = t.timer->newTimeout([] {}, absl::InfiniteDuration()).value();
  EXPECT_EQ(DeadlineNanos(delay), 15 * kMs);
  EXPECT_EQ(DeadlineNanos(past), 10 * kMs);
  EXPECT_EQ(DeadlineNanos(never), INT64_MAX);
  EXPECT_EQ(t.AdvanceTo(15 * kMs), 2);
  EXPECT_TRUE(delay.isExpired());
  EXPECT_TRUE(past.isExpired());
  EXPECT_FALSE(never.isExpired());
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
}

TEST(LocalTimerTest, RefusesTimersInvalidOptions) {
  LocalTimerOptions zero_tick;
  zero_tick.tick_duration = absl::ZeroDuration();
  EXPECT_EQ(LocalTimer::Create(zero_tick).status().code(),
            absl::StatusCode::kInvalidArgument);
  LocalTimerOptions no_buckets;
  no_buckets.ticks_per_wheel = 0;
  EXPECT_EQ(LocalTimer::Create(no_buckets).status().code(),
            absl::StatusCode::kInvalidArgument);
  LocalTimerOptions negative_slack;
  negative_slack.slack = absl::Milliseconds(-1);
  EXPECT_TRUE(
      StatusMentions(LocalTimer::Create(negative_slack).status(), "slack"));
  LocalTimerOptions rounded;
  rounded.ticks_per_wheel = 100;
  rounded.tick_duration = absl::Microseconds(250);
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create(rounded).value();
  EXPECT_EQ(timer->ticksPerWheel(), 128);
  EXPECT_EQ(timer->tickDuration(), absl::Microseconds(250));
  EXPECT_EQ(timer->slack(), absl::Microseconds(250));
}

// Inside a task: advance() does nothing, nextWakeup() is now().
TEST(LocalTimerTest, AdvanceAndPlanFromATaskWaitForTheRunningAdvance) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  LocalTimer* timer = t.timer.get();
  int64_t nested_ran = -1;
  int poll = -1;
  std::optional<TimePoint> wake;
  t.timer->newTimeout([] {}, absl::Milliseconds(1)).value();
  t.timer
      ->newTimeout(
          [&] {
            nested_ran = timer->advance();
            poll = timer->pollTimeoutMs();
            wake = timer->nextWakeup();
          },
          absl::Milliseconds(1))
      .value();
  t.timer->newTimeout([] {}, absl::Milliseconds(1)).value();
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 3);
  EXPECT_EQ(nested_ran, 0);
  EXPECT_EQ(poll, 0);
  EXPECT_EQ(wake, At(1 * kMs));
}

// metrics(): runs, lateness, advance() calls, cancellations.
TEST(LocalTimerTest, MetricsCountRunsLatenessAndAdvances) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  t.timer->newTimeout([] {}, absl::Milliseconds(1)).value();
  t.timer->newTimeout([] {}, absl::Milliseconds(2)).value();
  Timeout cancelled = t.timer->newTimeout([] {}, absl::Milliseconds(3)).value();
  EXPECT_TRUE(cancelled.cancel());
  t.AdvanceTo(1 * kMs);
  t.AdvanceTo(2500 * kUs);
  const TimerMetrics m = t.timer->metrics();
  EXPECT_EQ(m.expired, 2);
  EXPECT_EQ(m.cancelled, 1);
  EXPECT_EQ(m.pending, 0);
  EXPECT_EQ(m.wakeups, 2);
  EXPECT_EQ(m.lateness.count(), 2);
  EXPECT_EQ(m.worst_lateness, absl::Microseconds(500));
}

}  // namespace
}  // namespace tickwheel
