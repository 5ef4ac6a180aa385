// Tests of what Wheel::Advance()'s and Wheel::ExpireFiledBy()'s callback may
// do to the wheel while a bucket is expired: file nodes (into a later tick of
// the same call, into the tick being expired, overdue) and unlink nodes (of
// the bucket being expired, and others), with the invariants checked after
// every call. Single-threaded, no clock: the wheels have a 1 ns tick.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/wheel_test_peer.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {
namespace {

// A deadline of d + 1 is due at tick d.
void File(Wheel& wheel, TimeoutNode* n, int64_t due_tick) {
  n->deadline.store(due_tick + 1);
  wheel.Insert(n, n->deadline.load());
}

using Expiries = std::vector<std::pair<int64_t, TimeoutNode*>>;

TEST(WheelExpiryTest, NodeFiledForALaterTickRunsInThatTicksTurn) {
  Nodes nodes;
  Wheel wheel(16);
  TimeoutNode* a = nodes.New();
  TimeoutNode* b = nodes.New();
  TimeoutNode* c = nodes.New();
  TimeoutNode* moved = nodes.New();
  File(wheel, a, 1);
  File(wheel, b, 3);
  File(wheel, c, 5);
  Expiries out;
  EXPECT_TRUE(wheel.Advance(10, INT64_MAX, [&](TimeoutNode* n) {
    out.emplace_back(wheel.elapsed(), n);
    // Filed while tick 1 is expired, for tick 4: between b and c.
    if (n == a) File(wheel, moved, 4);
    return true;
  }));
  EXPECT_EQ(out, (Expiries{{1, a}, {3, b}, {4, moved}, {5, c}}));
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelExpiryTest, NodeFiledIntoTheTickBeingExpiredRunsAfterItsNodes) {
  Nodes nodes;
  Wheel wheel(8);
  TimeoutNode* a = nodes.New();
  TimeoutNode* b = nodes.New();
  TimeoutNode* same = nodes.New();
  TimeoutNode* overdue = nodes.New();
  File(wheel, a, 2);
  File(wheel, b, 2);
  Expiries out;
  EXPECT_TRUE(wheel.Advance(2, INT64_MAX, [&](TimeoutNode* n) {
    out.emplace_back(wheel.elapsed(), n);
    if (n == a) {
      File(wheel, same, 2);
      File(wheel, overdue, 0);  // joins the bucket of elapsed()
      EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
    }
    return true;
  }));
  EXPECT_EQ(out, (Expiries{{2, a}, {2, b}, {2, same}, {2, overdue}}));
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelExpiryTest, NodesOfTheBucketBeingExpiredCanBeUnlinked) {
  Nodes nodes;
  Wheel wheel(8);
  std::vector<TimeoutNode*> bucket;
  for (int i = 0; i < 6; ++i) {
    bucket.push_back(nodes.New());
    File(wheel, bucket.back(), 1);
  }
  TimeoutNode* later = nodes.New();
  File(wheel, later, 5);
  std::vector<TimeoutNode*> out;
  EXPECT_TRUE(wheel.Advance(6, INT64_MAX, [&](TimeoutNode* n) {
    out.push_back(n);
    if (n == bucket[0]) {
      int seen = 0;
      wheel.ForEach([&](TimeoutNode*) { ++seen; });
      EXPECT_EQ(seen, 6);  // the rest of the bucket, and `later`
      wheel.Remove(bucket[2]);
      wheel.Remove(bucket[5]);
      wheel.Remove(later);
      EXPECT_FALSE(Wheel::Linked(bucket[2]));
      EXPECT_EQ(wheel.size(), 3);
    }
    return true;
  }));
  EXPECT_EQ(out, (std::vector<TimeoutNode*>{bucket[0], bucket[1], bucket[3],
                                            bucket[4]}));
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelExpiryTest, StopLeavesTheRestBeforeWhatWasFiledMeanwhile) {
  Nodes nodes;
  Wheel wheel(8);
  std::vector<TimeoutNode*> bucket;
  for (int i = 0; i < 5; ++i) {
    bucket.push_back(nodes.New());
    File(wheel, bucket.back(), 3);
  }
  TimeoutNode* filed = nodes.New();
  std::vector<TimeoutNode*> out;
  auto take = [&](TimeoutNode* n) {
    out.push_back(n);
    if (n == bucket[1]) File(wheel, filed, 3);
    return true;
  };
  // A budget of 2 stops the call inside the bucket, after the filing.
  EXPECT_FALSE(wheel.Advance(3, 2, take));
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  EXPECT_EQ(wheel.size(), 4);
  // Unlinking a node that went back, and one filed meanwhile, works.
  wheel.Remove(bucket[3]);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  while (!wheel.Advance(3, 2, take)) {
  }
  EXPECT_EQ(out, (std::vector<TimeoutNode*>{bucket[0], bucket[1], bucket[2],
                                            bucket[4], filed}));
  EXPECT_EQ(wheel.elapsed(), 4);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelExpiryTest, DrainAllDuringExpiryTakesTheRestOfTheBucket) {
  Nodes nodes;
  Wheel wheel(8);
  for (int i = 0; i < 4; ++i) File(wheel, nodes.New(), 2);
  File(wheel, nodes.New(), 7);
  int ran = 0;
  int drained = 0;
  EXPECT_TRUE(wheel.Advance(7, INT64_MAX, [&](TimeoutNode*) {
    ++ran;
    wheel.DrainAll([&](TimeoutNode*) { ++drained; });
    return true;
  }));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(drained, 4);
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

// Within a tick: a node filed into the tick in progress waits for the next
// call, and the bucket is sorted again for it.
TEST(WheelExpiryTest, ExpireFiledByLeavesWhatWasFiledMeanwhile) {
  Nodes nodes;
  Wheel wheel(8, /*tick_nanos=*/100);
  wheel.SortEachTick();
  TimeoutNode* a = nodes.New();
  TimeoutNode* b = nodes.New();
  TimeoutNode* early = nodes.New();
  a->deadline.store(10);
  b->deadline.store(60);
  wheel.Insert(a, a->deadline.load());
  wheel.Insert(b, b->deadline.load());
  ASSERT_EQ(wheel.EarliestFiledAt(0), 10);
  std::vector<TimeoutNode*> out;
  auto take = [&](TimeoutNode* n) {
    out.push_back(n);
    if (n == a) {
      early->deadline.store(20);  // before b, due by the call's deadline
      wheel.Insert(early, early->deadline.load());
    }
    return true;
  };
  ASSERT_TRUE(wheel.ExpireFiledBy(50, INT64_MAX, take));
  EXPECT_EQ(out, (std::vector<TimeoutNode*>{a}));
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  ASSERT_EQ(wheel.EarliestFiledAt(0), 20);
  ASSERT_TRUE(wheel.ExpireFiledBy(70, INT64_MAX, take));
  EXPECT_EQ(out, (std::vector<TimeoutNode*>{a, early, b}));
  EXPECT_EQ(wheel.size(), 0);
}

}  // namespace
}  // namespace tickwheel::internal
