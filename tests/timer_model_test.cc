// tests/timer_model_test.cc
// -----------------------------------------------------------------------------
// The reference model (tests/model/timer_model.h) checked against expectations
// worked out by hand from the documented contract, so that the fuzzer compares
// the timer against something known to be right.

#include "tests/model/timer_model.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::model {
namespace {

using State = TimerModel::State;

std::vector<int64_t> RunClocks(const TimerModel& m) {
  std::vector<int64_t> clocks;
  for (const Event& e : m.events()) {
    if (e.kind == Event::Kind::kRan) clocks.push_back(e.clock);
  }
  return clocks;
}

TEST(TimerModelTest, RunsAtFirstTickEndAtOrAfterDeadline) {
  TimerModel m({.tick_nanos = 10});
  Code code;
  for (int d : {0, 5, 10, 11, 39, 40, 41, 100, -7}) {
    m.Schedule(false, absl::Nanoseconds(d), {}, &code);
    ASSERT_EQ(code, Code::kOk);
  }
  for (int i = 0; i < 20; ++i) m.Advance(absl::Nanoseconds(10));
  // Acceptance order within a tick: the negative delay (id 8) runs last at 10.
  EXPECT_EQ(RunClocks(m),
            (std::vector<int64_t>{10, 10, 10, 10, 20, 40, 40, 50, 100}));
  EXPECT_EQ(m.events()[3].id, 8);
  EXPECT_EQ(m.CheckContract(), "");
}

TEST(TimerModelTest, NeverIntoAPassedTickAndCatchUpInOrder) {
  TimerModel m({.tick_nanos = 10, .clock_start = 1000});
  Code code;
  m.Schedule(false, absl::Nanoseconds(100), {}, &code);  // starts at 1000
  m.Advance(absl::Nanoseconds(25));                      // ticks 0, 1 done
  EXPECT_EQ(m.ticks_processed(), 2);
  m.Schedule(false, absl::ZeroDuration(), {}, &code);   // deadline 25: tick 2
  m.Schedule(false, absl::Nanoseconds(30), {}, &code);  // deadline 55: tick 5
  m.Advance(absl::Nanoseconds(200));                    // all at once
  ASSERT_EQ(m.events().size(), 3u);
  EXPECT_EQ(m.events()[0].id, 1);
  EXPECT_EQ(m.events()[0].tick, 2);
  EXPECT_EQ(m.events()[1].id, 2);
  EXPECT_EQ(m.events()[1].tick, 5);
  EXPECT_EQ(m.events()[2].id, 0);
  EXPECT_EQ(m.events()[2].tick, 9);
  EXPECT_EQ(m.events()[2].clock, 1225);  // the clock did not move meanwhile
}

TEST(TimerModelTest, ChildOfCatchUpTaskCountsFromTheClock) {
  TimerModel m({.tick_nanos = 10});
  Code code;
  TaskAction parent{.repeat = 1, .child_delay = absl::Nanoseconds(5)};
  m.Schedule(false, absl::ZeroDuration(), parent, &code);  // tick 0
  m.Advance(absl::Nanoseconds(100));  // runs at tick 0 with the clock at 100
  // Child: deadline 105 -> tick 10 (ends at 110), not tick 1.
  ASSERT_EQ(m.events().size(), 2u);
  EXPECT_EQ(m.events()[1].kind, Event::Kind::kChildScheduled);
  m.Advance(absl::Nanoseconds(10));
  ASSERT_EQ(m.events().size(), 3u);
  EXPECT_EQ(m.events()[2].id, 1);
  EXPECT_EQ(m.events()[2].tick, 10);
}

TEST(TimerModelTest, ChildDueInAnEndedTickRunsAtTheNextBoundary) {
  TimerModel m({.tick_nanos = 10});
  Code code;
  TaskAction parent{.repeat = 1, .child_delay = absl::ZeroDuration()};
  m.Schedule(false, absl::ZeroDuration(), parent, &code);
  m.Advance(absl::Nanoseconds(100));
  // Child: deadline 100 is tick 9's end, which this pass has processed.
  EXPECT_EQ(m.Pending(), 1);
  m.Advance(absl::Nanoseconds(10));
  ASSERT_EQ(m.events().size(), 3u);
  EXPECT_EQ(m.events()[2].tick, 10);
}

TEST(TimerModelTest, OverdueAtScheduleRunsAtOnceOrAtTheNextBoundary) {
  for (bool at_once : {true, false}) {
    TimerModel m({.tick_nanos = 10});
    Code code;
    m.Schedule(false, absl::Hours(1), {}, &code);  // starts the timer
    m.Advance(absl::Nanoseconds(30));
    const int64_t id = m.Schedule(false, absl::ZeroDuration(), {}, &code);
    ASSERT_TRUE(m.Overdue(id));  // deadline 30: tick 2, which has ended
    m.ResolveOverdue(id, at_once, /*observed_tick=*/2);
    if (at_once) {
      ASSERT_EQ(m.events().size(), 1u);
      EXPECT_EQ(m.events()[0].tick, 2);
    } else {
      EXPECT_TRUE(m.events().empty());
      m.Advance(absl::Nanoseconds(10));
      ASSERT_EQ(m.events().size(), 1u);
      EXPECT_EQ(m.events()[0].tick, 3);
    }
    EXPECT_EQ(m.CheckContract(), "");
  }
}

// A Timer's cancel() that takes a timeout back out of its lane while the
// worker reads that lane makes the worker leave the rest of the lane to its
// next pass: what the test thread scheduled after the timeout then runs after
// the first pass, each in its own ended tick, reporting that tick or the
// ticks processed; what is not due yet is filed.
TEST(TimerModelTest, TakeBackDuringAPassLeavesTheLaneToTheNextPass) {
  auto scenario = [](const std::vector<Event>* observed) {
    TimerModel m({.tick_nanos = 10});
    Code code;
    m.Schedule(false, absl::Nanoseconds(50), {}, &code);   // #0: tick 4
    m.Schedule(false, absl::Nanoseconds(5), {}, &code);    // #1: taken back
    m.Schedule(false, absl::Nanoseconds(5), {}, &code);    // #2: tick 0
    m.Schedule(false, absl::Nanoseconds(45), {}, &code);   // #3: tick 4
    m.Schedule(false, absl::Nanoseconds(500), {}, &code);  // #4: tick 49
    EXPECT_TRUE(m.Cancel(1));
    EXPECT_EQ(m.AdvanceHoldingBack(absl::Nanoseconds(100), 1, observed), 3);
    return m;
  };
  TimerModel m = scenario(nullptr);
  ASSERT_EQ(m.events().size(), 3u);
  EXPECT_EQ(m.events()[0].id, 0);
  EXPECT_EQ(m.events()[0].tick, 4);
  EXPECT_EQ(m.events()[1].id, 2);  // after the first pass, in its own tick
  EXPECT_EQ(m.events()[1].tick, 0);
  EXPECT_EQ(m.events()[2].id, 3);
  EXPECT_EQ(m.events()[2].tick, 4);
  EXPECT_EQ(m.Pending(), 1);
  EXPECT_EQ(m.CheckContract(), "");
  m.Advance(absl::Nanoseconds(400));
  ASSERT_EQ(m.events().size(), 4u);
  EXPECT_EQ(m.events()[3].id, 4);
  EXPECT_EQ(m.events()[3].tick, 49);

  // The tick the worker reports for a held task: its own, or the ticks
  // processed (10), and nothing else.
  std::vector<Event> observed = scenario(nullptr).events();
  observed[1].tick = 10;
  EXPECT_EQ(scenario(&observed).events(), observed);
  observed[1].tick = 7;
  EXPECT_EQ(scenario(&observed).events()[1].tick, 0);
}

TEST(TimerModelTest, CancelDestroysCapturesAtOnce) {
  TimerModel m({.tick_nanos = 10});
  Code code;
  const int64_t id = m.Schedule(false, absl::Nanoseconds(50), {}, &code);
  EXPECT_TRUE(m.CapturesAlive(id));
  EXPECT_TRUE(m.Cancel(id));
  EXPECT_FALSE(m.Cancel(id));
  EXPECT_EQ(m.Pending(), 0);
  EXPECT_FALSE(m.CapturesAlive(id));
  m.Advance(absl::Nanoseconds(100));
  EXPECT_TRUE(m.events().empty());
}

TEST(TimerModelTest, MaxPendingAndStop) {
  TimerModel m({.tick_nanos = 10, .max_pending = 2});
  Code code;
  m.Schedule(false, absl::InfiniteDuration(), {}, &code);
  m.Schedule(false, absl::Nanoseconds(30), {}, &code);
  m.Schedule(false, absl::Nanoseconds(1), {}, &code);
  EXPECT_EQ(code, Code::kResourceExhausted);
  m.Schedule(true, absl::Nanoseconds(1), {}, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_EQ(m.Stop(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(m.state(0), State::kStopped);
  EXPECT_TRUE(m.IsCancelled(0));
  EXPECT_TRUE(m.TakeTask(0));
  EXPECT_FALSE(m.TakeTask(0));
  m.Schedule(false, absl::Nanoseconds(1), {}, &code);
  EXPECT_EQ(code, Code::kFailedPrecondition);
  EXPECT_TRUE(m.Stop().empty());
  EXPECT_EQ(m.CheckContract(), "");
}

// A periodic task due every 10 ns from 10, and a clock that jumps from 10 to
// 55: the run due at 20 is late, 30, 40 and 50 were missed. kBurst runs them
// at once, in the late run's turn; kDelay moves the grid to 65; kSkip goes
// on at 60.
TEST(TimerModelTest, MissedRunsFollowThePolicy) {
  const std::vector<std::pair<Missed, std::vector<int64_t>>> cases = {
      {Missed::kSkip, {10, 55, 60, 70}},
      {Missed::kBurst, {10, 55, 55, 55, 55, 60, 70}},
      {Missed::kDelay, {10, 55, 65, 75}},
  };
  for (const auto& [missed, clocks] : cases) {
    TimerModel m({.tick_nanos = 1});
    Code code;
    m.SchedulePeriodic(absl::Nanoseconds(10), absl::Nanoseconds(10), {}, missed,
                       &code);
    ASSERT_EQ(code, Code::kOk);
    m.Advance(absl::Nanoseconds(10));
    m.Advance(absl::Nanoseconds(45));
    for (int i = 0; i < 20; ++i) m.Advance(absl::Nanoseconds(1));
    EXPECT_EQ(RunClocks(m), clocks) << MissedName(missed);
    if (missed == Missed::kBurst) {  // in the late run's turn: tick 19
      for (size_t i = 1; i < 5; ++i) EXPECT_EQ(m.events()[i].tick, 19);
    }
    EXPECT_EQ(m.CheckContract(), "");
  }
}

// More than kModelMaxBurst missed runs: only the latest kModelMaxBurst run.
TEST(TimerModelTest, BurstIsBounded) {
  TimerModel m({.tick_nanos = 1});
  Code code;
  m.SchedulePeriodic(absl::Nanoseconds(1), absl::Nanoseconds(1), {},
                     Missed::kBurst, &code);
  m.Advance(absl::Nanoseconds(1));
  m.Advance(absl::Nanoseconds(5000));  // 2 late at 5001, 3..5001 missed
  EXPECT_EQ(m.Runs(0), 2 + kModelMaxBurst);
  EXPECT_EQ(m.ClockDeadline(0), 5002);
  EXPECT_EQ(m.CheckContract(), "");
}

}  // namespace
}  // namespace tickwheel::model
