// tests/local_timer_model_test.cc
// -----------------------------------------------------------------------------
// The LocalTimer's reference model (tests/model/timer_model.h,
// TimerKind::kLocal) checked against expectations worked out by hand from
// timer/local_timer.h, so that the LocalTimer fuzzer compares against something
// known to be right.

#include "tests/model/timer_model.h"

#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::model {
namespace {

std::vector<int64_t> RanIds(const TimerModel& m) {
  std::vector<int64_t> ids;
  for (const Event& e : m.events()) {
    if (e.kind == Event::Kind::kRan) ids.push_back(e.id);
  }
  return ids;
}

TEST(LocalTimerModelTest, OneAdvanceRunsWhatIsDueInDeadlineOrder) {
  TimerModel m(
      {.kind = TimerKind::kLocal, .tick_nanos = 10, .clock_start = 1000});
  Code code;
  for (int d : {25, 5, 25, 15, 31}) {
    m.Schedule(false, absl::Nanoseconds(d), {}, &code);
    ASSERT_EQ(code, Code::kOk);
  }
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(1010));
  m.AdvanceClock(30);
  EXPECT_EQ(m.Advance(), 4);  // 31 runs at the end of its tick, 1040
  EXPECT_EQ(RanIds(m), (std::vector<int64_t>{1, 3, 0, 2}));
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(1040));
  EXPECT_EQ(m.CheckContract(), "");
}

TEST(LocalTimerModelTest, ZeroSlackRunsAtTheDeadline) {
  TimerModel m(
      {.kind = TimerKind::kLocal, .tick_nanos = 10, .zero_slack = true});
  Code code;
  m.Schedule(false, absl::Nanoseconds(3), {}, &code);
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(3));
  m.AdvanceClock(2);
  EXPECT_EQ(m.Advance(), 0);
  m.AdvanceClock(1);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_EQ(m.EarliestRunTime(), std::nullopt);
}

TEST(LocalTimerModelTest, WhatATaskSchedulesRunsInALaterAdvance) {
  TimerModel m(
      {.kind = TimerKind::kLocal, .tick_nanos = 10, .zero_slack = true});
  Code code;
  TaskAction parent;
  parent.repeat = 1;  // a child due at once
  m.Schedule(false, absl::Nanoseconds(10), parent, &code);
  m.AdvanceClock(10);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_EQ(m.Pending(), 1);
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(10));  // due now
  EXPECT_EQ(m.Advance(), 1);  // the clock has not moved
  ASSERT_EQ(m.events().back().kind, Event::Kind::kRan);
  EXPECT_EQ(m.events().back().id, 1);
  EXPECT_EQ(m.events().back().tick, 2);  // the second advance()
  EXPECT_EQ(m.CheckContract(), "");
}

// With the default slack, a deadline in a tick an advance() has processed
// waits for the end of the next tick, whoever schedules it.
TEST(LocalTimerModelTest, NothingIsFiledIntoAProcessedTick) {
  TimerModel m({.kind = TimerKind::kLocal, .tick_nanos = 10});
  Code code;
  TaskAction parent;
  parent.repeat = 1;
  m.Schedule(false, absl::Nanoseconds(10), parent, &code);
  m.AdvanceClock(20);
  EXPECT_EQ(m.Advance(), 1);  // ticks 0 and 1 are processed
  // The child's deadline, 20, is in tick 1: it waits for the end of tick 2.
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(30));
  m.Schedule(false, absl::ZeroDuration(), {}, &code);  // deadline 20
  EXPECT_TRUE(m.ResetAt(1, 0));                        // deadline 20
  EXPECT_EQ(m.Advance(), 0);
  m.AdvanceClock(10);
  EXPECT_EQ(m.Advance(), 2);
  EXPECT_EQ(m.CheckContract(), "");
}

TEST(LocalTimerModelTest, PeriodicRunsOncePerAdvanceAndSkipsMissedRuns) {
  TimerModel m({.kind = TimerKind::kLocal, .tick_nanos = 10});
  Code code;
  const int64_t id = m.SchedulePeriodic(
      absl::Nanoseconds(10), absl::Nanoseconds(10), {}, Missed::kSkip, &code);
  m.AdvanceClock(55);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_EQ(m.ClockDeadline(id), 60);
  m.AdvanceClock(5);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_EQ(m.ClockDeadline(id), 70);
  EXPECT_EQ(m.Pending(), 1);
}

TEST(LocalTimerModelTest, StopFromATaskEndsTheAdvanceAndLeavesTheRest) {
  TimerModel m({.kind = TimerKind::kLocal, .tick_nanos = 10});
  Code code;
  TaskAction stops;
  stops.try_stop = true;
  m.Schedule(false, absl::Nanoseconds(5), stops, &code);
  m.Schedule(false, absl::Nanoseconds(7), {}, &code);
  m.Schedule(false, absl::Nanoseconds(30), {}, &code);
  m.AdvanceClock(10);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.EarliestRunTime(), std::nullopt);
  m.Schedule(false, absl::Nanoseconds(1), {}, &code);
  EXPECT_EQ(code, Code::kFailedPrecondition);
  EXPECT_EQ(m.Stop(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(m.Stop().empty());
  EXPECT_EQ(m.CheckContract(), "");
}

TEST(LocalTimerModelTest, ResetMovesTheRunTime) {
  TimerModel m({.kind = TimerKind::kLocal, .tick_nanos = 10});
  Code code;
  m.Schedule(false, absl::Nanoseconds(10), {}, &code);
  EXPECT_TRUE(m.Reset(0, absl::Nanoseconds(35)));
  EXPECT_EQ(m.EarliestRunTime(), std::optional<int64_t>(40));
  m.AdvanceClock(10);
  EXPECT_EQ(m.Advance(), 0);
  m.AdvanceClock(30);
  EXPECT_EQ(m.Advance(), 1);
  EXPECT_FALSE(m.Reset(0, absl::Nanoseconds(1)));
}

}  // namespace
}  // namespace tickwheel::model
