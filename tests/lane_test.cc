// Tests of the fast lane (worker/lane.h): order, capacity, take-back, and,
// under concurrent producers and cancellers (run under TSan by the CI), that
// every item goes exactly once either to the consumer or back to its
// canceller.

#include "tickwheel/worker/lane.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

using SmallLane = Lane<int, 4>;

// Pops with a fresh snapshot of the claimed cells.
SmallLane::Popped PopNow(SmallLane& lane, int** got) {
  lane.Refresh();
  return lane.Pop(got);
}

// A take-back that leaves a tombstone: what cancel() does when it cannot
// give the cell back.
template <typename L>
bool TakeBackAndBury(L& lane, int64_t index, int* item) {
  if (!L::TakeBackPending(lane.Cell(index), item)) return false;
  L::Bury(lane.Cell(index));
  return true;
}

int* Push(SmallLane& lane, int* item) {
  const int64_t cell = lane.Claim();
  if (cell < 0) return nullptr;
  lane.Publish(cell, item);
  return item;
}

TEST(LaneTest, FifoFullAndReuse) {
  SmallLane lane;
  int v[6] = {0, 1, 2, 3, 4, 5};
  int* got = nullptr;
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kEmpty);
  EXPECT_TRUE(lane.Empty());
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Push(lane, &v[i]), &v[i]);
  EXPECT_EQ(lane.Claim(), -1) << "full: the caller takes another path";
  ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
  EXPECT_EQ(got, &v[0]);
  ASSERT_EQ(Push(lane, &v[4]), &v[4]);  // wraps onto the freed cell
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
    EXPECT_EQ(got, &v[i]);
  }
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kEmpty);
  EXPECT_TRUE(lane.Empty());
}

TEST(LaneTest, TakeBackFromADestroyedLanesCellFailsHarmlessly) {
  // What a late cancel() does after its timer is gone: a CAS through a cell
  // address of a lane that no longer exists. The array is type-stable: the
  // next lane of the size takes it, cleared, and the CAS fails there.
  int a = 0, b = 1;
  auto old_lane = std::make_unique<SmallLane>();
  const int64_t ca = old_lane->Claim();
  std::atomic<int*>* cell = old_lane->Cell(ca);
  old_lane->Publish(ca, &a);
  int* got = nullptr;
  ASSERT_EQ(PopNow(*old_lane, &got), SmallLane::Popped::kItem);
  old_lane.reset();

  SmallLane lane;
  const int64_t cb = lane.Claim();
  ASSERT_EQ(lane.Cell(cb), cell) << "the array was handed on";
  lane.Publish(cb, &b);
  EXPECT_FALSE(SmallLane::TakeBackPending(cell, &a));
  EXPECT_TRUE(SmallLane::TakeBackPending(cell, &b))
      << "the live item is intact";
  SmallLane::Bury(cell);
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kTakenBack);
}

TEST(LaneTest, TakeBackLeavesATombstoneAndLosesToPop) {
  SmallLane lane;
  int a = 0, b = 1;
  const int64_t ca = lane.Claim();
  lane.Publish(ca, &a);
  const int64_t cb = lane.Claim();
  lane.Publish(cb, &b);
  EXPECT_TRUE(TakeBackAndBury(lane, ca, &a));
  EXPECT_FALSE(TakeBackAndBury(lane, ca, &a)) << "only once";
  int* got = nullptr;
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kTakenBack);
  ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
  EXPECT_EQ(got, &b);
  EXPECT_FALSE(TakeBackAndBury(lane, cb, &b)) << "the consumer has it";
  // The cell is reused for another item: taking back the old one fails.
  int c = 2;
  for (int i = 0; i < 4; ++i) {
    const int64_t cell = lane.Claim();
    lane.Publish(cell, &c);
    ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
  }
  const int64_t cc = lane.Claim();
  lane.Publish(cc, &c);
  EXPECT_FALSE(TakeBackAndBury(lane, cc, &a));
  EXPECT_TRUE(TakeBackAndBury(lane, cc, &c));
}

TEST(LaneTest, UnclaimGivesBackOnlyTheLastClaimedCell) {
  SmallLane lane;
  int a = 0, b = 1;
  int* got = nullptr;
  const int64_t ca = lane.Claim();
  lane.Publish(ca, &a);
  lane.Refresh();  // the consumer has seen the claim
  ASSERT_TRUE(SmallLane::TakeBackPending(lane.Cell(ca), &a));
  EXPECT_FALSE(SmallLane::TakeBackPending(lane.Cell(ca), &a)) << "only once";
  EXPECT_EQ(lane.Pop(&got), SmallLane::Popped::kNotYet) << "waits there";
  ASSERT_TRUE(lane.Unclaim(lane.Cell(ca)));
  EXPECT_TRUE(lane.Empty());
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kEmpty);
  EXPECT_EQ(lane.Claim(), ca) << "the same cell again";
  lane.Publish(ca, &a);
  const int64_t cb = lane.Claim();
  lane.Publish(cb, &b);
  // Not the last claimed: a tombstone instead.
  ASSERT_TRUE(SmallLane::TakeBackPending(lane.Cell(ca), &a));
  EXPECT_FALSE(lane.Unclaim(lane.Cell(ca)));
  SmallLane::Bury(lane.Cell(ca));
  SmallLane other;
  EXPECT_FALSE(other.Unclaim(lane.Cell(cb))) << "another lane's cell";
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kTakenBack);
  ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
  EXPECT_EQ(got, &b);
}

TEST(LaneTest, ClaimedButUnpublishedIsNotYet) {
  SmallLane lane;
  int a = 0;
  const int64_t cell = lane.Claim();
  int* got = nullptr;
  EXPECT_FALSE(lane.Empty());
  EXPECT_EQ(PopNow(lane, &got), SmallLane::Popped::kNotYet);
  lane.Publish(cell, &a);
  ASSERT_EQ(PopNow(lane, &got), SmallLane::Popped::kItem);
  EXPECT_EQ(got, &a);
}

// Producers publish items and take back every other one at once, racing the
// consumer; each item must be counted exactly once, by the consumer or by
// its producer.
TEST(LaneTest, ConcurrentProducersTakeBackRacingTheConsumer) {
  constexpr int kProducers = 3, kPerProducer = 100000;
  std::vector<int> items(kProducers * kPerProducer);
  std::vector<std::atomic<int>> owners(items.size());
  Lane<int, 64> lane;
  std::atomic<int> producers_left{kProducers};
  std::atomic<int> took_back{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const int id = p * kPerProducer + i;
        int64_t cell;
        while ((cell = lane.Claim()) < 0) std::this_thread::yield();
        lane.Publish(cell, &items[id]);
        if (i % 4 == 0 && TakeBackAndBury(lane, cell, &items[id])) {
          owners[id].fetch_add(1, std::memory_order_relaxed);
          took_back.fetch_add(1, std::memory_order_relaxed);
        } else if (i % 4 == 2 && Lane<int, 64>::TakeBackPending(lane.Cell(cell),
                                                                &items[id])) {
          // What cancel() does: give the cell back if it is the last
          // claimed, else leave a tombstone.
          owners[id].fetch_add(1, std::memory_order_relaxed);
          if (!lane.Unclaim(lane.Cell(cell))) {
            Lane<int, 64>::Bury(lane.Cell(cell));
            took_back.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
      producers_left.fetch_sub(1, std::memory_order_release);
    });
  }
  int taken_back = 0;
  while (true) {
    const bool last_look = producers_left.load(std::memory_order_acquire) == 0;
    int* got = nullptr;
    lane.Refresh();
    switch (lane.Pop(&got)) {
      case Lane<int, 64>::Popped::kItem:
        owners[got - items.data()].fetch_add(1, std::memory_order_relaxed);
        continue;
      case Lane<int, 64>::Popped::kTakenBack:
        ++taken_back;
        continue;
      default:
        break;
    }
    if (last_look && lane.Empty()) break;
    std::this_thread::yield();
  }
  for (auto& t : producers) t.join();
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(owners[i].load(), 1) << i;
  }
  // Every take-back that did not give its cell back left exactly one
  // tombstone for the consumer.
  EXPECT_EQ(taken_back, took_back.load());
}

}  // namespace
}  // namespace tickwheel::internal
