// tests/pool_decay_test.cc
// -----------------------------------------------------------------------------
// The node pool gives freed memory back to the kernel by decay: a chunk whose
// cells have all come back stays resident until it has gone unused for
// DecayPolicy::kDecayNanos, then Decay() releases it (and the pages leave the
// process's RSS), down to kKeptFreeChunks, highest addresses first; reserve
// chunks decay the same way; a Give() that makes the first decay due calls
// one registered waker, and nothing is due once the pool is at its floor;
// once every registered waker (worker) has gone, freed chunks beyond the
// floor go back at once.
// Decay() takes the time as an argument: these tests pass readings of the
// real clock shifted by the period, so that nothing depends on how long the
// test takes. (A worker on the real clock doing this is in pool_worker_test.)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pool_test_util.h"
#include "tickwheel/base/clock.h"
#include "tickwheel/worker/cell_depot.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/chunk.h"
#include "tickwheel/worker/chunk_policy.h"

namespace tickwheel::internal {
namespace {

using ::tickwheel::testing::AllocateOnAThread;
using ::tickwheel::testing::FreeOnAThread;
using ::tickwheel::testing::kResidentMemoryIsOurs;
using ::tickwheel::testing::ResidentBytes;

template <int N>
struct Tag {};

constexpr int64_t kPeriod = DecayPolicy::kDecayNanos;

uintptr_t ChunkOf(const void* p) {
  return reinterpret_cast<uintptr_t>(p) / kChunkBytes;
}

TEST(PoolDecayTest, FreedChunksStayResidentForTheDecayPeriod) {
  using Pool = CellPool<Tag<1>, 64>;
  CellDepot& depot = Pool::Depot();
  const int64_t start = MonotonicNanos();
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0x5A, 64);
  const size_t resident = depot.ResidentChunks();
  EXPECT_GE(resident, 6u);
  EXPECT_EQ(depot.NextDecayNanos(),
            DecayPolicy::kNothingDue);  // nothing free yet
  FreeOnAThread<Pool>(cells);
  // Every chunk emptied after `start`: a decay is due one period after.
  EXPECT_GE(depot.NextDecayNanos(), start + kPeriod);
  EXPECT_LE(depot.NextDecayNanos(), MonotonicNanos() + kPeriod);
  depot.Decay(start + kPeriod - 1);
  EXPECT_EQ(depot.ResidentChunks(), resident);
  EXPECT_EQ(depot.ReleasedChunks(), 0u);
  // A moment before the period is over for all of them, nothing goes either:
  // the reading is earlier than NextDecayNanos().
  depot.Decay(depot.NextDecayNanos() - 1);
  EXPECT_EQ(depot.ResidentChunks(), resident);
}

TEST(PoolDecayTest, ChunksUnusedForThePeriodGoBackDownToTheFloor) {
  using Pool = CellPool<Tag<2>, 64>;
  CellDepot& depot = Pool::Depot();
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0x5A, 64);
  std::vector<uintptr_t> chunks;
  for (void* p : cells) chunks.push_back(ChunkOf(p));
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  const size_t mapped = depot.MappedBytes();
  FreeOnAThread<Pool>(cells);
  const size_t resident = depot.ResidentChunks();
  const int64_t rss_before = ResidentBytes();
  depot.Decay(MonotonicNanos() + kPeriod);
  EXPECT_EQ(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_EQ(depot.ReleasedChunks(), resident - DecayPolicy::kKeptFreeChunks);
  EXPECT_EQ(depot.MappedBytes(), mapped);  // address ranges stay mapped
  EXPECT_EQ(depot.NextDecayNanos(),
            DecayPolicy::kNothingDue);  // at the floor: no more
  // The pages really left: RSS fell by most of what was released (other
  // threads of the test binary may allocate meanwhile, hence the margin).
  const int64_t released =
      static_cast<int64_t>(depot.ReleasedChunks() * kChunkBytes);
  if (kResidentMemoryIsOurs) {
    EXPECT_GE(rss_before - ResidentBytes(), released * 3 / 4);
  }
  // The chunks kept are those at the lowest addresses.
  const std::vector<void*> one = AllocateOnAThread<Pool>(1, 0, 64);
  EXPECT_TRUE(ChunkOf(one[0]) == chunks[0] || ChunkOf(one[0]) == chunks[1]);
  FreeOnAThread<Pool>(one);
  // Released memory is handed out again, writable, in the same ranges.
  const std::vector<void*> again =
      AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0xA5, 64);
  EXPECT_EQ(depot.MappedBytes(), mapped);
  EXPECT_EQ(depot.ReleasedChunks(), 0u);
  for (void* p : again) {
    ASSERT_EQ(*static_cast<unsigned char*>(p), 0xA5);
  }
  FreeOnAThread<Pool>(again);
}

TEST(PoolDecayTest, ReserveChunksUnusedForThePeriodGoBackToo) {
  using Pool = CellPool<Tag<3>, 64>;
  CellDepot& depot = Pool::Depot();
  // Growth of forty-eight chunks makes Replenish() fault several more in.
  constexpr size_t kGrown = 48;
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(kGrown * depot.CellsPerChunk(), 0x11, 64);
  std::thread([&] {
    while (depot.Replenish()) {
    }
  }).join();
  EXPECT_GT(depot.ReserveChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_LT(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  // Cells in use keep their chunks; the reserve goes down to the floor.
  depot.Decay(MonotonicNanos() + kPeriod);
  EXPECT_EQ(depot.ReserveChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_EQ(depot.ResidentChunks(), kGrown + DecayPolicy::kKeptFreeChunks);
  FreeOnAThread<Pool>(cells);
  depot.Decay(MonotonicNanos() + kPeriod);
  EXPECT_EQ(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
}

TEST(PoolDecayTest, AChunkInUseIsNeverReleased) {
  using Pool = CellPool<Tag<4>, 64>;
  CellDepot& depot = Pool::Depot();
  std::vector<void*> cells =
      AllocateOnAThread<Pool>(4 * depot.CellsPerChunk(), 0x33, 64);
  // One live cell in each chunk.
  std::vector<void*> live, dead;
  for (void* p : cells) {
    (std::none_of(live.begin(), live.end(),
                  [&](void* q) { return ChunkOf(q) == ChunkOf(p); })
         ? live
         : dead)
        .push_back(p);
  }
  FreeOnAThread<Pool>(dead);
  depot.Decay(MonotonicNanos() + kPeriod);
  EXPECT_EQ(depot.ReleasedChunks(), 0u);
  for (void* p : live) EXPECT_EQ(*static_cast<unsigned char*>(p), 0x33);
  FreeOnAThread<Pool>(live);
}

TEST(PoolDecayTest, TheFirstDecayDueCallsOneWakerOnce) {
  using Pool = CellPool<Tag<5>, 64>;
  CellDepot& depot = Pool::Depot();
  std::atomic<int> first{0}, second{0};
  const auto count = [](void* n) {
    static_cast<std::atomic<int>*>(n)->fetch_add(1);
  };
  depot.AddWaker(count, &first);
  depot.AddWaker(count, &second);
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(5 * depot.CellsPerChunk(), 0x44, 64);
  EXPECT_EQ(first.load(), 0);  // nothing spare beyond the floor yet
  FreeOnAThread<Pool>(cells);
  // Five chunks emptied, one decay due: the first waker heard of it, once.
  EXPECT_EQ(first.load(), 1);
  EXPECT_EQ(second.load(), 0);
  // The one that hears goes away with a decay still due: the next hears.
  depot.RemoveWaker(&first);
  EXPECT_EQ(second.load(), 1);
  depot.Decay(MonotonicNanos() + kPeriod);
  EXPECT_EQ(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  depot.RemoveWaker(&second);
  EXPECT_EQ(second.load(), 1);  // nothing due: nobody called
}

TEST(PoolDecayTest, ASmallPoolHasNothingToDecay) {
  using Pool = CellPool<Tag<6>, 64>;
  CellDepot& depot = Pool::Depot();
  const std::vector<void*> cells = AllocateOnAThread<Pool>(1000, 0x55, 64);
  std::thread([&] { depot.Replenish(); }).join();
  FreeOnAThread<Pool>(cells);
  // One chunk in use, one in reserve: both within the floor, kept for good.
  EXPECT_EQ(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  depot.Decay(MonotonicNanos() + 100 * kPeriod);
  EXPECT_EQ(depot.ResidentChunks(), 2u);
  EXPECT_EQ(depot.ReleasedChunks(), 0u);
}

// Once every worker has gone (each Timer on the real clock registers its
// worker as a waker while it runs), nothing would wake to decay later: the
// last one to go gives back what waited for it, and after that a Give()
// that empties a chunk beyond the floor gives back every spare one at once.
TEST(PoolDecayTest, OnceEveryWorkerHasGoneFreedChunksGoBackAtOnce) {
  using Pool = CellPool<Tag<7>, 64>;
  CellDepot& depot = Pool::Depot();
  int worker = 0;
  depot.AddWaker([](void*) {}, &worker);
  std::vector<void*> cells =
      AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0x66, 64);
  FreeOnAThread<Pool>(cells);
  EXPECT_GT(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_LT(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  depot.RemoveWaker(&worker);  // with the decay still due
  EXPECT_EQ(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_EQ(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  // No worker now: memory freed later goes back as it is freed.
  cells = AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0x66, 64);
  FreeOnAThread<Pool>(cells);
  EXPECT_EQ(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
  EXPECT_EQ(depot.NextDecayNanos(), DecayPolicy::kNothingDue);
  // A worker again: retention for the decay period again.
  depot.AddWaker([](void*) {}, &worker);
  cells = AllocateOnAThread<Pool>(6 * depot.CellsPerChunk(), 0x66, 64);
  FreeOnAThread<Pool>(cells);
  EXPECT_GT(depot.ResidentChunks(), DecayPolicy::kKeptFreeChunks);
  depot.Decay(MonotonicNanos() + kPeriod);
  depot.RemoveWaker(&worker);
}

}  // namespace
}  // namespace tickwheel::internal
