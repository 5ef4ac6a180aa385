// Tests of the single-threaded hierarchical wheel: the bit arithmetic,
// placement and cascading, O(1) removal, budgets, and a randomized comparison
// against an obviously-correct model. No threads and no clock. The invariant
// check and the inspection helpers live in tests/wheel_test_peer.h.

#include "tickwheel/worker/wheel.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/pool_test_util.h"
#include "tests/wheel_test_peer.h"

namespace tickwheel::internal {
namespace {

// The due tick by division, the obvious way: the first tick whose end,
// (k + 1) * tick_nanos, is at or after `deadline` (nanoseconds after start),
// so that nothing runs early; ceil(deadline / tick) - 1, written so that it
// cannot overflow. The wheel's DueTickAt() multiplies instead and must agree.
int64_t DueTick(int64_t deadline, int64_t tick_nanos) {
  if (deadline <= 0) return 0;
  return deadline / tick_nanos + (deadline % tick_nanos != 0 ? 1 : 0) - 1;
}

// The wheels here have a 1 ns tick, so a deadline of d + 1 is due at tick d.
void Insert(Wheel& wheel, TimeoutNode* n, int64_t due_tick) {
  n->deadline.store(due_tick == INT64_MAX ? INT64_MAX : due_tick + 1);
  wheel.Insert(n, n->deadline.load());
}

// Advances to `last_tick` with an unlimited budget; returns (tick, node) of
// every expiry in order.
std::vector<std::pair<int64_t, TimeoutNode*>> AdvanceTo(Wheel& wheel,
                                                        int64_t last_tick) {
  std::vector<std::pair<int64_t, TimeoutNode*>> out;
  EXPECT_TRUE(wheel.Advance(last_tick, INT64_MAX, [&](TimeoutNode* n) {
    // The worker relies on this: elapsed() is the tick being expired, the
    // node's due tick or, for an overdue node, the later tick it was moved
    // to (the tests compare these ticks with the due ticks they inserted).
    EXPECT_LE(wheel.DueTickAt(n->deadline.load()), wheel.elapsed());
    EXPECT_LE(wheel.elapsed(), last_tick);
    out.emplace_back(wheel.elapsed(), n);
    return true;
  }));
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "")
      << "after advancing to " << last_tick;
  return out;
}

TEST(WheelTest, NormalizeTicksPerWheelRoundsUpToPowerOfTwo) {
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(1), 1);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(3), 4);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(500), 512);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(512), 512);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(513), 1024);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel((1 << 29) + 1), 1 << 30);
  EXPECT_EQ(Wheel::NormalizeTicksPerWheel(1 << 30), 1 << 30);
}

TEST(WheelTest, DueTickIsFirstTickEndingAtOrAfterDeadline) {
  // Tick k ends at (k + 1) * tick_nanos; the due tick is the first whose end
  // is >= deadline (never early) and the one before ends before it (never a
  // tick late).
  for (int64_t tick_nanos = 1; tick_nanos <= 17; ++tick_nanos) {
    for (int64_t deadline = 0; deadline <= 200; ++deadline) {
      const int64_t due = DueTick(deadline, tick_nanos);
      ASSERT_GE((due + 1) * tick_nanos, deadline);
      if (due > 0) {
        ASSERT_LT(due * tick_nanos, deadline);
      }
    }
  }
  EXPECT_EQ(DueTick(INT64_MAX, 1), INT64_MAX - 1);
  EXPECT_EQ(DueTick(INT64_MAX, INT64_MAX), 0);
  EXPECT_EQ(DueTick(-5, 10), 0);
}

TEST(WheelTest, LevelsCoverEveryTick) {
  EXPECT_EQ(WheelTestPeer::Levels(Wheel(512)), 10);  // 9 + 6 * 9 = 63 bits
  EXPECT_EQ(WheelTestPeer::Levels(Wheel(1)), 12);    // 0 + 6 * 11 = 66 bits
  EXPECT_EQ(WheelTestPeer::Levels(Wheel(1 << 20)), 9);
}

TEST(WheelTest, ExpiresExactlyAtDueTickAcrossLevels) {
  Nodes nodes;
  Wheel wheel(8);  // level 0: 8 ticks; level 1: 64 buckets of 8; ...
  const std::vector<int64_t> due = {
      0, 1, 7, 8, 9, 63, 64, 511, 512, 513, 4095, 4096, 801, 801, 5000, 32767};
  for (int64_t d : due) {
    TimeoutNode* n = nodes.New();
    Insert(wheel, n, d);
    EXPECT_EQ(WheelTestPeer::RemainingRounds(wheel, n), d / 8) << "due=" << d;
  }
  ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  std::vector<int64_t> seen;
  for (int64_t tick = 0; tick <= 40000; tick += 37) {
    for (auto& [t, n] : AdvanceTo(wheel, tick)) {
      EXPECT_LE(t, tick);
      EXPECT_GT(t, tick - 37);
      seen.push_back(t);
    }
  }
  std::vector<int64_t> sorted = due;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(seen, sorted);
  EXPECT_EQ(wheel.size(), 0);
}

// The level a node is filed at is the one of the highest mixed-radix digit
// in which its due tick and elapsed differ (wheel.h, Geometry), computed
// here digit by digit. The invariant check accepts a node filed too high (it
// would only cascade once more), so this pins the choice itself.
int ReferenceLevel(int bits0, int64_t due, int64_t elapsed) {
  int level = 0;
  int shift = bits0;  // the low bit of level 1's digit
  for (int l = 1; shift < 64; ++l, shift += Wheel::kUpperLevelBits) {
    if ((static_cast<uint64_t>(due) >> shift) !=
        (static_cast<uint64_t>(elapsed) >> shift)) {
      level = l;
    }
  }
  return level;
}

TEST(WheelTest, FilesEachNodeAtTheLevelOfItsHighestDifferingDigit) {
  std::mt19937_64 rng(7);
  for (int bits0 : {0, 1, 3, 9, 20}) {
    Nodes nodes;
    Wheel wheel(1 << bits0);
    for (int64_t elapsed :
         {int64_t{0}, int64_t{5}, int64_t{777}, int64_t{1} << 33}) {
      if (elapsed > 0) AdvanceTo(wheel, elapsed - 1);  // the wheel is empty
      const int64_t at = wheel.elapsed();
      ASSERT_EQ(at, elapsed);
      for (int i = 0; i < 400; ++i) {
        // Ahead by 0 to 2^62 - 1 ticks, spread over every bit width.
        const int64_t due =
            at + static_cast<int64_t>(rng() >> (2 + rng() % 62));
        TimeoutNode* n = nodes.New();
        Insert(wheel, n, due);
        ASSERT_EQ(Wheel::LevelOf(n), ReferenceLevel(bits0, due, at))
            << "bits0=" << bits0 << " elapsed=" << at << " due=" << due;
        wheel.Remove(n);
      }
    }
  }
}

TEST(WheelTest, NextWorkTickSkipsEmptyTicksAndSeesCascades) {
  Nodes nodes;
  Wheel wheel(8);
  EXPECT_EQ(wheel.NextWorkTick(), Wheel::kNever);
  Insert(wheel, nodes.New(), 5);
  EXPECT_EQ(wheel.NextWorkTick(), 5);
  AdvanceTo(wheel, 5);
  EXPECT_EQ(wheel.elapsed(), 6);
  // Tick 1000 differs from elapsed in bit 9: level 2, whose buckets span 512
  // ticks. The wheel must come back at the start of that bucket (512) to move
  // it down, and not before.
  TimeoutNode* far = nodes.New();
  Insert(wheel, far, 1000);
  EXPECT_EQ(Wheel::LevelOf(far), 2);
  EXPECT_EQ(wheel.NextWorkTick(), 512);
  EXPECT_TRUE(AdvanceTo(wheel, 958).empty());
  EXPECT_EQ(Wheel::LevelOf(far),
            1);  // cascaded at the start of its bucket, early
  EXPECT_EQ(wheel.NextWorkTick(), 1000 & ~7);
  auto fired = AdvanceTo(wheel, 1000);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].first, 1000);
}

TEST(WheelTest, PastDueTickIsRaisedToElapsed) {
  Nodes nodes;
  Wheel wheel(8);
  AdvanceTo(wheel, 9);
  TimeoutNode* on_time = nodes.New();
  Insert(wheel, on_time, 10);
  TimeoutNode* late = nodes.New();
  Insert(wheel, late, 3);  // its tick is long processed
  EXPECT_EQ(Wheel::LevelOf(late), Wheel::kOverdueLevel);
  EXPECT_EQ(WheelTestPeer::RemainingRounds(wheel, late), 0);
  EXPECT_EQ(wheel.NextWorkTick(), 10);
  EXPECT_TRUE(AdvanceTo(wheel, 9).empty());  // not before tick 10 ends
  auto fired = AdvanceTo(wheel, 10);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].second, on_time);  // in insertion order within the tick
  EXPECT_EQ(fired[1].second, late);
}

TEST(WheelTest, RemoveOverdueNode) {
  Nodes nodes;
  Wheel wheel(8);
  AdvanceTo(wheel, 20);
  TimeoutNode* a = nodes.New();
  TimeoutNode* b = nodes.New();
  Insert(wheel, a, 1);
  Insert(wheel, b, 2);
  wheel.Remove(a);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  auto fired = AdvanceTo(wheel, 21);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].second, b);
  EXPECT_EQ(wheel.NextWorkTick(), Wheel::kNever);
}

TEST(WheelTest, TickRunsInInsertionOrderEvenAfterCascades) {
  Nodes nodes;
  Wheel wheel(4);
  TimeoutNode* a = nodes.New();
  TimeoutNode* b = nodes.New();
  Insert(wheel, a, 100);  // upper level
  AdvanceTo(wheel, 95);   // a has moved down by now
  Insert(wheel, b, 100);  // straight into level 0
  auto fired = AdvanceTo(wheel, 100);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].second, a);
  EXPECT_EQ(fired[1].second, b);
}

TEST(WheelTest, RemoveFromAnyPositionAndLevel) {
  Nodes nodes;
  Wheel wheel(2);
  std::vector<TimeoutNode*> n;
  for (int64_t d : {0, 0, 0, 0, 1, 50, 50, 5000}) {
    n.push_back(nodes.New());
    Insert(wheel, n.back(), d);
  }
  for (int i : {1, 0, 3, 4, 6, 7}) {
    wheel.Remove(n[i]);
    ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "") << "removing " << i;
    EXPECT_FALSE(Wheel::Linked(n[i]));
  }
  EXPECT_EQ(wheel.size(), 2);
  auto fired = AdvanceTo(wheel, 100);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].second, n[2]);
  EXPECT_EQ(fired[1].second, n[5]);
  EXPECT_EQ(wheel.NextWorkTick(), Wheel::kNever);
}

TEST(WheelTest, BudgetSlicesABurst) {
  Nodes nodes;
  Wheel wheel(16);
  for (int i = 0; i < 10; ++i) Insert(wheel, nodes.New(), 3);
  int fired = 0;
  auto count = [&](TimeoutNode*) {
    ++fired;
    return true;
  };
  EXPECT_FALSE(wheel.Advance(3, 4, count));
  EXPECT_EQ(fired, 4);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  EXPECT_FALSE(wheel.Advance(3, 4, count));
  EXPECT_TRUE(wheel.Advance(3, 4, count));
  EXPECT_EQ(fired, 10);
  EXPECT_EQ(wheel.elapsed(), 4);
}

TEST(WheelTest, ExpireReturningFalseStopsAtOnce) {
  Nodes nodes;
  Wheel wheel(1);
  for (int i = 0; i < 3; ++i) Insert(wheel, nodes.New(), 0);
  int seen = 0;
  EXPECT_FALSE(wheel.Advance(0, INT64_MAX, [&](TimeoutNode*) {
    ++seen;
    return false;
  }));
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(wheel.size(), 2);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelTest, DrainAllUnlinksEveryLevel) {
  Nodes nodes;
  Wheel wheel(16);
  for (int i = 0; i < 100; ++i) Insert(wheel, nodes.New(), int64_t{i} * i * i);
  int drained = 0;
  wheel.DrainAll([&](TimeoutNode* n) {
    EXPECT_FALSE(Wheel::Linked(n));
    ++drained;
  });
  EXPECT_EQ(drained, 100);
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
}

TEST(WheelTest, HugeDueTicksNeverOverflow) {
  Nodes nodes;
  Wheel wheel(512);
  TimeoutNode* n = nodes.New();
  Insert(wheel, n, INT64_MAX - 1);
  EXPECT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  EXPECT_GT(wheel.NextWorkTick(), int64_t{1} << 62);
  EXPECT_TRUE(AdvanceTo(wheel, int64_t{1} << 40).empty());
  wheel.Remove(n);
}

TEST(WheelTest, CheckInvariantsReportsMisplacedNode) {
  Nodes nodes;
  Wheel wheel(8);
  TimeoutNode* n = nodes.New();
  Insert(wheel, n, 5);
  n->deadline.store(42);  // corrupt: now due at tick 41, in another bucket
  const std::string problem = WheelTestPeer::CheckInvariants(wheel);
  EXPECT_NE(problem.find("misplaced"), std::string::npos) << problem;
  EXPECT_NE(problem.find("deadline=42"), std::string::npos) << problem;
  n->deadline.store(6);
  wheel.Remove(n);
}

TEST(WheelTest, ManyRemovalsCompactABucketAndKeepOrder) {
  Nodes nodes;
  Wheel wheel(4);
  std::vector<TimeoutNode*> n;
  for (int i = 0; i < 1000; ++i) {
    n.push_back(nodes.New());
    Insert(wheel, n.back(), 2);
  }
  // Remove all but every tenth: the bucket compacts several times.
  for (int i = 0; i < 1000; ++i) {
    if (i % 10 != 0) wheel.Remove(n[i]);
  }
  ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  // New arrivals queue behind the survivors.
  TimeoutNode* last = nodes.New();
  Insert(wheel, last, 2);
  auto fired = AdvanceTo(wheel, 2);
  ASSERT_EQ(fired.size(), 101u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(fired[i].second, n[10 * i]);
  EXPECT_EQ(fired[100].second, last);
}

// A bucket past a page of slots moves to mapped pages (mmap, then mremap as
// it grows, munmap when it empties): contents and order must survive each
// move, and removals must still find their slots.
TEST(WheelTest, LargeBucketGrowsThroughMappedPages) {
  Nodes nodes;
  Wheel wheel(4);
  std::vector<TimeoutNode*> n;
  for (int i = 0; i < 70000; ++i) {  // 560 KB of slots: mmap, then mremap
    n.push_back(nodes.New());
    Insert(wheel, n.back(), 3);
  }
  for (int i = 0; i < 70000; i += 7) wheel.Remove(n[i]);
  ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  auto fired = AdvanceTo(wheel, 3);
  ASSERT_EQ(fired.size(), 60000u);
  size_t k = 0;
  for (int i = 0; i < 70000; ++i) {
    if (i % 7 == 0) continue;
    ASSERT_EQ(fired[k++].second, n[i]) << i;
  }
  // Emptied, the bucket gave its pages back; it can grow again.
  for (int i = 0; i < 20000; ++i) Insert(wheel, n[i], 5);
  EXPECT_EQ(AdvanceTo(wheel, 5).size(), 20000u);
}

// The slots of a big wheel live outside the malloc heap: memory the
// allocator handed the worker's thread would stay in that thread's arena
// once the buckets empty (glibc's malloc_trim() trims the main arena's top,
// not another arena's), so a burst of timeouts, all cancelled, would leave
// its slot arrays resident. Only arrays under a page come from malloc.
TEST(WheelTest, BigBucketsKeepTheirSlotsOutOfTheMallocHeap) {
  if (!::tickwheel::testing::kResidentMemoryIsOurs) {
    GTEST_SKIP() << "the sanitizer's allocator keeps its own books";
  }
  constexpr int kBuckets = 16, kPerBucket = 4000;  // 32 KB of slots each
  Nodes nodes;
  std::vector<TimeoutNode*> n;
  for (int i = 0; i < kBuckets * kPerBucket; ++i) n.push_back(nodes.New());
  Wheel wheel(64);
  const auto malloced = [] {
    const struct mallinfo2 m = mallinfo2();
    return static_cast<int64_t>(m.uordblks + m.hblkhd);
  };
  const int64_t before = malloced();
  for (int i = 0; i < kBuckets * kPerBucket; ++i) {
    Insert(wheel, n[i], 1 + i % kBuckets);
  }
  // Each bucket passed through malloc'd arrays up to half a page on its
  // way to mapped ones, and gave each back as it moved on.
  EXPECT_LT(malloced() - before, int64_t{kBuckets} * 4096);
  for (TimeoutNode* node : n) wheel.Remove(node);
  EXPECT_EQ(wheel.size(), 0);
  EXPECT_LE(malloced() - before, int64_t{kBuckets} * 4096);
}

TEST(WheelTest, BudgetStopResumesMidBucketWithArrivalsAndRemovals) {
  Nodes nodes;
  Wheel wheel(4);
  std::vector<TimeoutNode*> n;
  for (int i = 0; i < 50; ++i) {
    n.push_back(nodes.New());
    Insert(wheel, n.back(), 1);
  }
  std::vector<TimeoutNode*> got;
  auto take = [&](TimeoutNode* x) {
    got.push_back(x);
    return true;
  };
  EXPECT_FALSE(wheel.Advance(1, 20, take));
  // Between slices: a removal behind and ahead of the cursor, an arrival.
  wheel.Remove(n[30]);
  TimeoutNode* extra = nodes.New();
  Insert(wheel, extra, 1);
  ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  while (!wheel.Advance(1, 7, take)) {
    ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
  }
  std::vector<TimeoutNode*> expected;
  for (int i = 0; i < 50; ++i) {
    if (i != 30) expected.push_back(n[i]);
  }
  expected.push_back(extra);
  EXPECT_EQ(got, expected);
}

TEST(WheelTest, TickDividerMatchesDivision) {
  std::mt19937_64 rng(7);
  for (int64_t d :
       {int64_t{1}, int64_t{3}, int64_t{1000000}, int64_t{999999937},
        int64_t{1} << 40, INT64_MAX - 1, INT64_MAX}) {
    TickDivider div(d);
    for (int i = 0; i < 20000; ++i) {
      int64_t n = static_cast<int64_t>(rng() >> (rng() % 64));
      if (n < 0) n = -(n + 1);
      if (i < 4) n = std::vector<int64_t>{0, d - 1, d, INT64_MAX}[i];
      if (n < 0) continue;
      int64_t r;
      const int64_t q = div.Divide(n, &r);
      ASSERT_EQ(q, n / d) << n << " / " << d;
      ASSERT_EQ(r, n % d) << n << " % " << d;
    }
  }
}

TEST(WheelTest, DueTickAtMatchesDueTick) {
  std::mt19937_64 rng(11);
  for (int64_t tick :
       {int64_t{1}, int64_t{7}, int64_t{1000000}, int64_t{1} << 33}) {
    Wheel wheel(8, tick);
    for (int i = 0; i < 20000; ++i) {
      int64_t deadline = static_cast<int64_t>(rng() >> (1 + rng() % 63));
      if (i < 3) deadline = std::vector<int64_t>{0, 1, INT64_MAX}[i];
      ASSERT_EQ(wheel.DueTickAt(deadline), DueTick(deadline, tick))
          << deadline << " tick " << tick;
    }
  }
}

// Random inserts, removes and advances against a model that keeps
// (due tick, insertion number) in a sorted map: the wheel must hand out
// exactly what the model says, in the same order, and keep its invariants.
TEST(WheelTest, MatchesSortedModelOnRandomOperations) {
  for (int wheel_bits : {0, 1, 3, 6}) {
    std::mt19937_64 rng(wheel_bits + 1);
    Nodes nodes;
    Wheel wheel(1 << wheel_bits);
    std::map<std::pair<int64_t, int>, TimeoutNode*> model;
    std::map<TimeoutNode*, std::pair<int64_t, int>> key_of;
    int seq = 0;
    int64_t last = -1;
    for (int step = 0; step < 20000; ++step) {
      const int op = rng() % 10;
      if (op < 5) {
        // Mostly near, sometimes far.
        const int64_t span = (rng() % 8 == 0) ? 100000 : 300;
        const int64_t due = last + 1 + static_cast<int64_t>(rng() % span) -
                            static_cast<int64_t>(rng() % 3);
        TimeoutNode* n = nodes.New();
        Insert(wheel, n, due);
        const auto key = std::make_pair(std::max(due, wheel.elapsed()), seq++);
        model[key] = n;
        key_of[n] = key;
      } else if (op < 7 && !model.empty()) {
        auto it = model.begin();
        std::advance(it, rng() % model.size());
        wheel.Remove(it->second);
        key_of.erase(it->second);
        model.erase(it);
      } else {
        const int64_t to = last + static_cast<int64_t>(rng() % 200);
        std::vector<TimeoutNode*> expected;
        while (!model.empty() && model.begin()->first.first <= to) {
          expected.push_back(model.begin()->second);
          key_of.erase(model.begin()->second);
          model.erase(model.begin());
        }
        std::vector<TimeoutNode*> got;
        for (auto& [t, n] : AdvanceTo(wheel, to)) got.push_back(n);
        ASSERT_EQ(got, expected) << "bits=" << wheel_bits << " step=" << step;
        last = std::max(last, to);
      }
      ASSERT_EQ(wheel.size(), static_cast<int64_t>(model.size()));
      if (step % 97 == 0) {
        ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
      }
      const int64_t next = wheel.NextWorkTick();
      if (model.empty()) {
        ASSERT_EQ(next, Wheel::kNever);
      } else {
        // Work is never later than the earliest due node.
        ASSERT_LE(next, model.begin()->first.first);
      }
    }
  }
}

// A worker that wakes within ticks: Advance() with SortEachTick() plus
// ExpireFiledBy() for the tick in progress hand out every node whose
// deadline has come, in deadline order (ties in insertion order), and no
// other.
// A compaction that makes room for an append can bring a sorted bucket's
// size back to its size at the sort: the append must still count as one, so
// an earlier deadline appended after the sort is found and expired first.
TEST(WheelTest, AnAppendAfterACompactionStillResortsTheTick) {
  Nodes nodes;
  constexpr int64_t kTick = 1000;
  Wheel wheel(8, kTick);
  wheel.SortEachTick();
  auto file = [&](int64_t filed) {
    TimeoutNode* n = nodes.New();
    n->deadline.store(filed);
    wheel.Insert(n, n->deadline.load());
    return n;
  };
  std::vector<TimeoutNode*> got;
  auto take = [&](TimeoutNode* n) {
    got.push_back(n);
    return true;
  };
  // Eight slots: three due at 100, three later in the tick, sorted.
  for (int i = 0; i < 3; ++i) file(100);
  for (int64_t at : {700, 700, 500}) file(at);
  ASSERT_EQ(wheel.EarliestFiledAt(0), 100);
  ASSERT_TRUE(wheel.ExpireFiledBy(100, INT64_MAX, take));
  ASSERT_EQ(got.size(), 3u);
  // Three more at 100: the third finds the array full and compacts the
  // three tombstones out, so the size after it is 6 again.
  std::vector<TimeoutNode*> early;
  for (int i = 0; i < 3; ++i) early.push_back(file(100));
  EXPECT_EQ(wheel.EarliestFiledAt(0), 100);
  got.clear();
  ASSERT_TRUE(wheel.ExpireFiledBy(100, INT64_MAX, take));
  EXPECT_EQ(got, early);
  EXPECT_EQ(wheel.EarliestFiledAt(0), 500);
}

// A tick's bucket filed in deadline order needs no sort, and one that got a
// deadline earlier than the last one's is sorted, ties in insertion order,
// also after the bucket emptied and filled again.
TEST(WheelTest, ATicksBucketRunsInDeadlineOrderWhateverTheAppendOrder) {
  Nodes nodes;
  constexpr int64_t kTick = 1000;
  Wheel wheel(8, kTick);
  wheel.SortEachTick();
  auto file = [&](int64_t filed) {
    TimeoutNode* n = nodes.New();
    n->deadline.store(filed);
    wheel.Insert(n, n->deadline.load());
    return n;
  };
  std::vector<TimeoutNode*> got;
  auto take = [&](TimeoutNode* n) {
    got.push_back(n);
    return true;
  };
  for (int round = 0; round < 2; ++round) {
    // In order, with ties: insertion order.
    std::vector<TimeoutNode*> in_order = {file(100), file(100), file(300),
                                          file(300)};
    EXPECT_EQ(wheel.EarliestFiledAt(0), 100);
    got.clear();
    ASSERT_TRUE(wheel.ExpireFiledBy(999, INT64_MAX, take));
    EXPECT_EQ(got, in_order);
    // Out of order: the earlier deadlines first, ties as inserted.
    TimeoutNode* late = file(500);
    TimeoutNode* early1 = file(200);
    TimeoutNode* early2 = file(200);
    TimeoutNode* middle = file(400);
    EXPECT_EQ(wheel.EarliestFiledAt(0), 200);
    got.clear();
    ASSERT_TRUE(wheel.ExpireFiledBy(999, INT64_MAX, take));
    EXPECT_EQ(got, (std::vector<TimeoutNode*>{early1, early2, middle, late}));
    EXPECT_EQ(wheel.EarliestFiledAt(0), Wheel::kNever);
  }
}

TEST(WheelTest, WithinTickExpiryIsInDeadlineOrder) {
  for (int wheel_bits : {0, 2, 6}) {
    std::mt19937_64 rng(wheel_bits + 11);
    Nodes nodes;
    constexpr int64_t kTick = 10;
    Wheel wheel(1 << wheel_bits, kTick);
    wheel.SortEachTick();
    std::map<std::pair<int64_t, int>, TimeoutNode*> model;  // (filed, seq)
    int seq = 0;
    int64_t now = 0;
    for (int step = 0; step < 20000; ++step) {
      const int op = rng() % 10;
      if (op < 5) {
        const int64_t span = (rng() % 8 == 0) ? 100000 : 300;
        TimeoutNode* n = nodes.New();
        n->deadline.store(now + 1 + static_cast<int64_t>(rng() % span));
        wheel.Insert(n, n->deadline.load());
        model[{n->deadline.load(), seq++}] = n;
      } else if (op < 7 && !model.empty()) {
        auto it = model.begin();
        std::advance(it, rng() % model.size());
        wheel.Remove(it->second);
        model.erase(it);
      } else {
        now += static_cast<int64_t>(rng() % 40);
        std::vector<TimeoutNode*> expected;
        while (!model.empty() && model.begin()->first.first <= now) {
          expected.push_back(model.begin()->second);
          model.erase(model.begin());
        }
        std::vector<TimeoutNode*> got;
        auto take = [&](TimeoutNode* n) {
          got.push_back(n);
          return true;
        };
        ASSERT_TRUE(wheel.Advance(now / kTick - 1, INT64_MAX, take));
        if (wheel.EarliestFiledAt(wheel.elapsed()) <= now) {
          ASSERT_TRUE(wheel.ExpireFiledBy(now, INT64_MAX, take));
        }
        ASSERT_EQ(got, expected) << "bits=" << wheel_bits << " step=" << step;
        ASSERT_GT(wheel.EarliestFiledAt(wheel.elapsed()), now);
      }
      ASSERT_EQ(wheel.size(), static_cast<int64_t>(model.size()));
      if (step % 97 == 0) {
        ASSERT_EQ(WheelTestPeer::CheckInvariants(wheel), "");
      }
    }
  }
}

}  // namespace
}  // namespace tickwheel::internal
