// Tests of the single-threaded wheel: the bit arithmetic, placement, rounds
// and O(1) removal. No threads and no clock: the same inputs, the same result.

#include "timer/wheel.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

struct Nodes {
  std::vector<std::unique_ptr<TimeoutNode>> all;
  TimeoutNode* New(int64_t deadline) {
    all.push_back(std::make_unique<TimeoutNode>());
    all.back()->deadline = deadline;
    return all.back().get();
  }
};

std::vector<TimeoutNode*> Expire(Wheel& wheel, int64_t tick) {
  std::vector<TimeoutNode*> out;
  wheel.ExpireTick(tick, [&](TimeoutNode* n) {
    out.push_back(n);
    return true;
  });
  return out;
}

TEST(WheelTest, NormalizeTicksPerWheelRoundsUpToPowerOfTwo) {
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(1), 1);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(2), 2);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(3), 4);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(500), 512);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(512), 512);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(513), 1024);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel((1 << 29) + 1), 1 << 30);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(1 << 30), 1 << 30);
}

TEST(WheelTest, DueTickIsFirstTickEndingAtOrAfterDeadline) {
  // Exhaustive over small values: tick k ends at (k + 1) * tick_nanos; the due
  // tick is the first whose end is >= deadline, so never early, and the one
  // before it ends strictly before the deadline, so never a tick late.
  for (int64_t tick_nanos = 1; tick_nanos <= 17; ++tick_nanos) {
    for (int64_t deadline = 0; deadline <= 200; ++deadline) {
      const int64_t due = Wheel::DueTick(deadline, tick_nanos);
      ASSERT_GE((due + 1) * tick_nanos, deadline)
          << "deadline=" << deadline << " tick=" << tick_nanos;
      if (due > 0) {
        ASSERT_LT(due * tick_nanos, deadline)
            << "deadline=" << deadline << " tick=" << tick_nanos;
      }
    }
  }
}

TEST(WheelTest, DueTickNeverOverflows) {
  EXPECT_EQ(Wheel::DueTick(INT64_MAX, 1), INT64_MAX - 1);
  EXPECT_EQ(Wheel::DueTick(INT64_MAX, INT64_MAX), 0);
  EXPECT_EQ(Wheel::DueTick(INT64_MAX, 1000000), INT64_MAX / 1000000);
  EXPECT_EQ(Wheel::DueTick(-5, 10), 0);
}

TEST(WheelTest, InsertPlacesByMaskAndExpiresExactlyAtDueTick) {
  Nodes nodes;
  Wheel wheel(8);
  // Due ticks spanning many revolutions of an 8-bucket wheel.
  const std::vector<int64_t> due = {0, 1, 7, 8, 9, 15, 16, 63, 64, 100, 801};
  std::vector<TimeoutNode*> inserted;
  for (int64_t d : due) {
    TimeoutNode* n = nodes.New(d);
    wheel.Insert(n, d, /*current_tick=*/0);
    inserted.push_back(n);
    EXPECT_EQ(wheel.RemainingRounds(n, 0), d / 8) << "due=" << d;
  }
  ASSERT_EQ(wheel.CheckInvariants(0), "");
  for (int64_t tick = 0; tick <= 801; ++tick) {
    for (TimeoutNode* n : Expire(wheel, tick)) {
      EXPECT_EQ(n->due_tick, tick);
    }
    ASSERT_EQ(wheel.CheckInvariants(tick + 1), "") << "after tick " << tick;
  }
  EXPECT_EQ(wheel.size(), 0);
}

TEST(WheelTest, RoundsForDelaysManyTimesTheWheelLength) {
  Nodes nodes;
  Wheel wheel(4);
  TimeoutNode* far = nodes.New(0);
  wheel.Insert(far, /*due_tick=*/4 * 1000 + 3, /*current_tick=*/0);
  EXPECT_EQ(wheel.RemainingRounds(far, 0), 1000);
  int64_t expired_at = -1;
  for (int64_t tick = 0; tick < 5000 && expired_at < 0; ++tick) {
    if (!Expire(wheel, tick).empty()) expired_at = tick;
    if (tick == 2000) EXPECT_EQ(wheel.RemainingRounds(far, 2001), 500);
  }
  EXPECT_EQ(expired_at, 4003);
}

TEST(WheelTest, PastDueTickIsRaisedToCurrentTick) {
  Nodes nodes;
  Wheel wheel(8);
  TimeoutNode* late = nodes.New(0);
  wheel.Insert(late, /*due_tick=*/3, /*current_tick=*/10);
  EXPECT_EQ(late->due_tick, 10);
  EXPECT_EQ(wheel.RemainingRounds(late, 10), 0);
  EXPECT_EQ(wheel.CheckInvariants(10), "");
  EXPECT_EQ(Expire(wheel, 10), std::vector<TimeoutNode*>{late});
}

TEST(WheelTest, ExpireKeepsInsertionOrderAndLeavesLaterRounds) {
  Nodes nodes;
  Wheel wheel(4);
  TimeoutNode* a = nodes.New(0);
  TimeoutNode* later = nodes.New(0);
  TimeoutNode* b = nodes.New(0);
  wheel.Insert(a, 2, 0);
  wheel.Insert(later, 6, 0);  // same bucket, next round
  wheel.Insert(b, 2, 0);
  EXPECT_EQ(Expire(wheel, 2), (std::vector<TimeoutNode*>{a, b}));
  EXPECT_EQ(wheel.size(), 1);
  EXPECT_TRUE(later->in_bucket);
  EXPECT_EQ(Expire(wheel, 6), std::vector<TimeoutNode*>{later});
}

TEST(WheelTest, RemoveFromHeadMiddleTailAndAlone) {
  Nodes nodes;
  Wheel wheel(2);
  TimeoutNode* n[4];
  for (auto& p : n) {
    p = nodes.New(0);
    wheel.Insert(p, 0, 0);
  }
  TimeoutNode* alone = nodes.New(0);
  wheel.Insert(alone, 1, 0);
  wheel.Remove(n[1]);  // middle
  ASSERT_EQ(wheel.CheckInvariants(0), "");
  wheel.Remove(n[0]);  // head
  ASSERT_EQ(wheel.CheckInvariants(0), "");
  wheel.Remove(n[3]);  // tail
  ASSERT_EQ(wheel.CheckInvariants(0), "");
  wheel.Remove(alone);
  ASSERT_EQ(wheel.CheckInvariants(0), "");
  EXPECT_FALSE(alone->in_bucket);
  EXPECT_EQ(wheel.size(), 1);
  EXPECT_EQ(Expire(wheel, 0), std::vector<TimeoutNode*>{n[2]});
}

TEST(WheelTest, ExpireStopsWhenCallbackReturnsFalse) {
  Nodes nodes;
  Wheel wheel(1);
  for (int i = 0; i < 3; ++i) wheel.Insert(nodes.New(0), 0, 0);
  int seen = 0;
  const int64_t handed = wheel.ExpireTick(0, [&](TimeoutNode*) {
    ++seen;
    return false;
  });
  EXPECT_EQ(handed, 1);
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(wheel.size(), 2);
  EXPECT_EQ(wheel.CheckInvariants(0), "");
}

TEST(WheelTest, DrainAllUnlinksEverything) {
  Nodes nodes;
  Wheel wheel(16);
  for (int i = 0; i < 100; ++i) wheel.Insert(nodes.New(0), i * 7, 0);
  int drained = 0;
  wheel.DrainAll([&](TimeoutNode* n) {
    EXPECT_FALSE(n->in_bucket);
    ++drained;
  });
  EXPECT_EQ(drained, 100);
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_EQ(wheel.CheckInvariants(0), "");
}

TEST(WheelTest, CheckInvariantsReportsMisplacedNode) {
  Nodes nodes;
  Wheel wheel(8);
  TimeoutNode* n = nodes.New(42);
  wheel.Insert(n, 5, 0);
  n->due_tick = 6;  // corrupt: now in the wrong bucket
  const std::string problem = wheel.CheckInvariants(0);
  EXPECT_NE(problem.find("misplaced"), std::string::npos) << problem;
  EXPECT_NE(problem.find("deadline=42"), std::string::npos) << problem;
  n->due_tick = 5;
  wheel.Remove(n);
}

}  // namespace
}  // namespace tickwheel::internal
