// tests/chunk_policy_test.cc
// -----------------------------------------------------------------------------
// The node pool's policy (worker/chunk_policy.h), without a depot, a mutex or
// a clock. The reserve: its target is one chunk, grows with a run of growth
// (from the second chunk, then one per four, at most sixteen, and at most a
// sixteenth of the chunks in use) and falls back after a quiet window;
// Replenish() faults in while short, two chunks a call. The decay: a spare
// chunk beyond the floor starts it, nothing goes before it is due, due chunks
// go highest address first down to the floor, the slack takes chunks due soon
// along, and the next plan is the earliest chunk left.

#include "tickwheel/worker/chunk_policy.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tickwheel::internal {
namespace {

constexpr int64_t kWindow = ReservePolicy::kGrowthWindowNanos;
constexpr size_t kPerChunk = 1000;  // cells per chunk, for the checks
// Chunks in use: enough that the share of them does not cap the target.
constexpr size_t kManyInUse = size_t{1} << 20;

// A policy after `n` chunks put into use one nanosecond apart from `start`.
ReservePolicy AfterGrowth(size_t n, int64_t start = 1'000'000'000) {
  ReservePolicy policy;
  for (size_t i = 0; i < n; ++i) policy.NoteGrowth(start + int64_t(i));
  return policy;
}

TEST(ReservePolicyTest, TheTargetIsOneChunkBeforeAnyGrowth) {
  const ReservePolicy policy;
  EXPECT_EQ(policy.TargetChunks(0, kManyInUse), 1u);
  EXPECT_EQ(policy.TargetChunks(INT64_MAX / 2, kManyInUse), 1u);
  EXPECT_TRUE(policy.IsShort(kPerChunk - 1, kPerChunk, 0, kManyInUse));
  EXPECT_FALSE(policy.IsShort(kPerChunk, kPerChunk, 0, kManyInUse));
}

TEST(ReservePolicyTest, TheTargetGrowsFromTheSecondChunkThenOnePerFour) {
  // grown: 1 -> 1; 2..5 -> 2; 6..9 -> 3; 10..13 -> 4; ...
  const size_t expected[] = {1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4};
  for (size_t grown = 0; grown <= 10; ++grown) {
    EXPECT_EQ(ReservePolicy::TargetForGrowth(grown), expected[grown]) << grown;
    if (grown > 0) {
      const int64_t last = 1'000'000'000 + int64_t(grown) - 1;
      EXPECT_EQ(AfterGrowth(grown).TargetChunks(last, kManyInUse),
                expected[grown])
          << grown;
    }
  }
}

TEST(ReservePolicyTest, TheTargetIsCappedAtSixteenChunks) {
  EXPECT_EQ(ReservePolicy::TargetForGrowth(57), 15u);
  EXPECT_EQ(ReservePolicy::TargetForGrowth(58), 16u);
  EXPECT_EQ(ReservePolicy::TargetForGrowth(1'000'000), 16u);
  EXPECT_EQ(ReservePolicy::kMaxReserveChunks, 16u);
}

// A burst leaves at most a sixteenth of what it put into use faulted in
// ahead (one chunk at least), however fast it grew.
TEST(ReservePolicyTest, TheTargetIsCappedByAShareOfTheChunksInUse) {
  const ReservePolicy policy = AfterGrowth(58);
  const int64_t now = 1'000'000'057;
  ASSERT_EQ(policy.TargetChunks(now, kManyInUse), 16u);
  EXPECT_EQ(policy.TargetChunks(now, 0), 1u);
  EXPECT_EQ(policy.TargetChunks(now, 31), 1u);
  EXPECT_EQ(policy.TargetChunks(now, 32), 2u);
  EXPECT_EQ(policy.TargetChunks(now, 16 * 7), 7u);
  EXPECT_EQ(policy.TargetChunks(now, 16 * 40), 16u);
  EXPECT_TRUE(policy.IsShort(2 * kPerChunk - 1, kPerChunk, now, 32));
  EXPECT_FALSE(policy.IsShort(2 * kPerChunk, kPerChunk, now, 32));
  EXPECT_EQ(ReservePolicy::kInUsePerReserveChunk, 16u);
}

TEST(ReservePolicyTest, TheTargetFallsBackToOneAfterAQuietWindow) {
  const ReservePolicy policy = AfterGrowth(6, 0);
  const int64_t last = 5;
  EXPECT_EQ(policy.TargetChunks(last + kWindow, kManyInUse), 3u);
  EXPECT_EQ(policy.TargetChunks(last + kWindow + 1, kManyInUse), 1u);
}

TEST(ReservePolicyTest, GrowthAfterAQuietWindowStartsANewRun) {
  ReservePolicy policy = AfterGrowth(10, 0);
  // A window apart exactly still continues the run...
  policy.NoteGrowth(9 + kWindow);
  EXPECT_EQ(policy.TargetChunks(9 + kWindow, kManyInUse), 4u);  // 11 grown
  // ...a moment more starts a new one.
  policy.NoteGrowth(9 + 2 * kWindow + 1);
  EXPECT_EQ(policy.TargetChunks(9 + 2 * kWindow + 1, kManyInUse), 1u);
}

TEST(ReservePolicyTest, ShortOnlyBelowTheTargetsCells) {
  const ReservePolicy policy = AfterGrowth(6);
  const int64_t now = 1'000'000'005;
  ASSERT_EQ(policy.TargetChunks(now, kManyInUse),
            3u);  // six chunks grown in a run
  EXPECT_TRUE(policy.IsShort(3 * kPerChunk - 1, kPerChunk, now, kManyInUse));
  EXPECT_FALSE(policy.IsShort(3 * kPerChunk, kPerChunk, now, kManyInUse));
  // After the window the target is one chunk.
  EXPECT_FALSE(
      policy.IsShort(kPerChunk, kPerChunk, now + kWindow + 1, kManyInUse));
}

TEST(ReservePolicyTest, MayBeShortIsFalseOnlyWhenNoTimeMakesItShort) {
  for (size_t grown : {0, 1, 2, 6, 100}) {
    const ReservePolicy policy = AfterGrowth(grown);
    for (size_t ready = 0; ready <= 20 * kPerChunk; ready += kPerChunk / 2) {
      if (policy.MayBeShort(ready, kPerChunk)) continue;
      for (int64_t now : {int64_t{0}, int64_t{1'000'000'000} + 200,
                          int64_t{1'000'000'000} + kWindow + 200}) {
        for (size_t in_use : {size_t{0}, size_t{40}, kManyInUse}) {
          EXPECT_FALSE(policy.IsShort(ready, kPerChunk, now, in_use))
              << "grown " << grown << ", ready " << ready << ", now " << now;
        }
      }
    }
  }
}

TEST(ReservePolicyTest, ReplenishFaultsInWhileShortThenAsksForAnotherCall) {
  using Step = ReservePolicy::Step;
  const size_t target = 5 * kPerChunk;
  EXPECT_EQ(ReservePolicy::NextReplenishStep(0, target, false, 0),
            Step::kFaultOneIn);
  EXPECT_EQ(ReservePolicy::NextReplenishStep(kPerChunk, target, false, 1),
            Step::kFaultOneIn);
  EXPECT_EQ(
      ReservePolicy::NextReplenishStep(2 * kPerChunk, target, false,
                                       ReservePolicy::kChunksPerReplenish),
      Step::kAskAgain);
}

TEST(ReservePolicyTest, ReplenishStopsOnceReadyCellsMeetTheTarget) {
  using Step = ReservePolicy::Step;
  EXPECT_EQ(
      ReservePolicy::NextReplenishStep(5 * kPerChunk, 5 * kPerChunk, false, 0),
      Step::kEnough);
  // Before asking again: the share is spent, but so is the need.
  EXPECT_EQ(
      ReservePolicy::NextReplenishStep(5 * kPerChunk, 5 * kPerChunk, false,
                                       ReservePolicy::kChunksPerReplenish),
      Step::kEnough);
}

TEST(ReservePolicyTest, ReplenishLeavesItToTheThreadsAlreadyMapping) {
  EXPECT_EQ(ReservePolicy::NextReplenishStep(0, 5 * kPerChunk, true, 0),
            ReservePolicy::Step::kEnough);
}

// Decay -----------------------------------------------------------------------

constexpr int64_t kDecay = DecayPolicy::kDecayNanos;
constexpr size_t kFloor = DecayPolicy::kKeptFreeChunks;

// A chunk at the n-th chunk-aligned address; never dereferenced.
char* Chunk(uintptr_t n) { return reinterpret_cast<char*>(n << 21); }

TEST(DecayPolicyTest, ASpareChunkBeyondTheFloorStartsTheFirstDecay) {
  EXPECT_FALSE(DecayPolicy::StartsADecay(kFloor, DecayPolicy::kNothingDue));
  EXPECT_TRUE(DecayPolicy::StartsADecay(kFloor + 1, DecayPolicy::kNothingDue));
  // One is planned already: it comes no later, and its waker was told.
  EXPECT_FALSE(DecayPolicy::StartsADecay(kFloor + 1, 12345));
  EXPECT_EQ(DecayPolicy::DueAt(100), 100 + kDecay);
}

TEST(DecayPolicyTest, NothingIsDueBeforeThePlan) {
  const int64_t plan = DecayPolicy::DueAt(1'000);
  EXPECT_FALSE(DecayPolicy::IsDue(plan, plan - 1));
  EXPECT_TRUE(DecayPolicy::IsDue(plan, plan));
  EXPECT_FALSE(DecayPolicy::IsDue(DecayPolicy::kNothingDue, INT64_MAX - 1));
}

TEST(DecayPolicyTest, DueChunksGoHighestAddressFirstDownToTheFloor) {
  const std::vector<SpareChunk> spare = {{Chunk(3), 0},
                                         {Chunk(1), 0},
                                         {Chunk(5), 0},
                                         {Chunk(2), 0},
                                         {Chunk(4), 0}};
  const DecayPolicy::Decision d = DecayPolicy::Decide(spare, kDecay);
  EXPECT_EQ(d.release, (std::vector<char*>{Chunk(5), Chunk(4), Chunk(3)}));
  EXPECT_EQ(d.next, DecayPolicy::kNothingDue);  // at the floor
}

TEST(DecayPolicyTest, ChunksNotYetDueStayAndTheEarliestPlansTheNextDecay) {
  const std::vector<SpareChunk> spare = {{Chunk(1), 0},
                                         {Chunk(2), 500},
                                         {Chunk(3), 0},
                                         {Chunk(4), 700},
                                         {Chunk(5), 600}};
  const DecayPolicy::Decision d = DecayPolicy::Decide(spare, kDecay);
  EXPECT_EQ(d.release, (std::vector<char*>{Chunk(3), Chunk(1)}));
  EXPECT_EQ(d.next, DecayPolicy::DueAt(500));  // three left, beyond the floor
}

TEST(DecayPolicyTest, WhenMoreAreDueThanMayGoTheLowestStay) {
  const std::vector<SpareChunk> spare = {
      {Chunk(1), 0}, {Chunk(2), 0}, {Chunk(3), 900}, {Chunk(4), 0}};
  const DecayPolicy::Decision d = DecayPolicy::Decide(spare, kDecay);
  EXPECT_EQ(d.release, (std::vector<char*>{Chunk(4), Chunk(2)}));
  EXPECT_EQ(d.next, DecayPolicy::kNothingDue);
}

TEST(DecayPolicyTest, ChunksDueWithinTheSlackGoAlong) {
  const int64_t now = 10 * kDecay;
  const int64_t slack = DecayPolicy::kDecaySlackNanos;
  const std::vector<SpareChunk> spare = {
      {Chunk(1), now - kDecay},              // due now
      {Chunk(2), now - kDecay + slack},      // due at the slack's end
      {Chunk(3), now - kDecay + slack + 1},  // a moment later
      {Chunk(4), now},                       // just went spare
      {Chunk(5), now},
  };
  const DecayPolicy::Decision d =
      DecayPolicy::Decide(spare, DecayPolicy::DueBy(now));
  EXPECT_EQ(d.release, (std::vector<char*>{Chunk(2), Chunk(1)}));
  EXPECT_EQ(d.next, DecayPolicy::DueAt(now - kDecay + slack + 1));
}

TEST(DecayPolicyTest, AtTheFloorNothingGoesAndNothingIsPlanned) {
  const DecayPolicy::Decision d =
      DecayPolicy::Decide({{Chunk(1), 0}, {Chunk(2), 0}}, INT64_MAX / 2);
  EXPECT_TRUE(d.release.empty());
  EXPECT_EQ(d.next, DecayPolicy::kNothingDue);
}

TEST(DecayPolicyTest,
     EverythingDueTakesEverySpareBeyondTheFloorWhateverItsAge) {
  const int64_t now = 1'000'000'000'000;
  const std::vector<SpareChunk> spare = {
      {Chunk(1), now}, {Chunk(2), now}, {Chunk(3), now}, {Chunk(4), now}};
  const DecayPolicy::Decision d =
      DecayPolicy::Decide(spare, DecayPolicy::kEverythingDue);
  EXPECT_EQ(d.release, (std::vector<char*>{Chunk(4), Chunk(3)}));
  EXPECT_EQ(d.next, DecayPolicy::kNothingDue);
}

}  // namespace
}  // namespace tickwheel::internal
