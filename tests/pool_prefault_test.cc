// tests/pool_prefault_test.cc
// -----------------------------------------------------------------------------
// The node pool faults fresh memory in ahead of need, off the producers'
// threads: a Take() that leaves fewer cells ready than the reserve's target
// asks for more (ReserveWanted()), Replenish() on another thread faults the
// chunks in, and a producer then takes its cells without a page fault; the
// target grows with recent growth; a producer that finds no reserve still
// gets cells, mapping them itself. (The timer's worker doing this for
// newTimeout() is in pool_worker_test.)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pool_test_util.h"
#include "tickwheel/worker/cell_depot.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/chunk.h"
#include "tickwheel/worker/chunk_policy.h"

namespace tickwheel::internal {
namespace {

using ::tickwheel::testing::AllocateOnAThread;
using ::tickwheel::testing::FreeOnAThread;
using ::tickwheel::testing::kFaultsAreOurs;
using ::tickwheel::testing::ThreadMinorFaults;

// Each test uses its own pool, so that counts are not disturbed by others.
template <int N>
struct Tag {};

TEST(PoolPrefaultTest, TakingFromAFreshChunkAsksForTheReserve) {
  using Pool = CellPool<Tag<1>, 64>;
  CellDepot& depot = Pool::Depot();
  EXPECT_FALSE(depot.ReserveWanted());
  void* cell = Pool::Allocate();
  // The producer mapped the first chunk itself (there was no reserve) and
  // left fewer than a chunk's cells ready: it asks for one more.
  EXPECT_EQ(depot.MappedBytes(), kChunkBytes);
  EXPECT_EQ(depot.ReserveChunks(), 0u);
  EXPECT_TRUE(depot.ReserveWanted());
  // Another thread answers: one chunk faulted in, kept in reserve.
  std::thread([&] { depot.Replenish(); }).join();
  EXPECT_FALSE(depot.ReserveWanted());
  EXPECT_EQ(depot.ReserveChunks(), 1u);
  EXPECT_EQ(depot.MappedBytes(), 2 * kChunkBytes);
  // Asked once, served once: no third chunk.
  depot.Replenish();
  EXPECT_EQ(depot.MappedBytes(), 2 * kChunkBytes);
  Pool::Free(cell);
}

TEST(PoolPrefaultTest, ProducersUseTheReserveInsteadOfMapping) {
  using Pool = CellPool<Tag<2>, 64>;
  CellDepot& depot = Pool::Depot();
  std::vector<void*> cells;
  cells.push_back(Pool::Allocate());
  std::thread([&] { depot.Replenish(); }).join();
  ASSERT_EQ(depot.MappedBytes(), 2 * kChunkBytes);
  // Past the first chunk: the second comes from the reserve, nothing new is
  // mapped until somebody replenishes.
  const size_t per_chunk = depot.CellsPerChunk();
  while (cells.size() < per_chunk + 1000) cells.push_back(Pool::Allocate());
  EXPECT_EQ(depot.MappedBytes(), 2 * kChunkBytes);
  EXPECT_EQ(depot.ReserveChunks(), 0u);
  EXPECT_TRUE(depot.ReserveWanted());
  std::set<void*> unique(cells.begin(), cells.end());
  EXPECT_EQ(unique.size(), cells.size());
  for (void* p : cells) Pool::Free(p);
}

TEST(PoolPrefaultTest, TheTargetGrowsWithRecentGrowth) {
  using Pool = CellPool<Tag<3>, 64>;
  CellDepot& depot = Pool::Depot();
  EXPECT_EQ(depot.ReserveTargetChunks(), 1u);
  // Forty-eight chunks put into use in a row, nobody replenishing.
  constexpr size_t kGrown = 48;
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(kGrown * depot.CellsPerChunk(), 0x11, 64);
  // One, one more from the second chunk on, one per further four; at most
  // one per sixteen in use.
  constexpr size_t kTarget =
      std::min(2 + (kGrown - 2) / ReservePolicy::kGrowthPerReserveChunk,
               kGrown / ReservePolicy::kInUsePerReserveChunk);
  static_assert(kTarget > ReservePolicy::kChunksPerReplenish);
  EXPECT_EQ(depot.ReserveTargetChunks(), kTarget);
  // One call faults kChunksPerReplenish in and asks for the next call;
  // calls until it no longer asks make that many chunks' worth of cells
  // ready (free cells of the last chunk in use count), without a Take().
  std::thread([&] {
    EXPECT_TRUE(depot.Replenish());
    EXPECT_EQ(depot.ReserveChunks(), ReservePolicy::kChunksPerReplenish);
    EXPECT_TRUE(depot.ReserveWanted());
    while (depot.Replenish()) {
    }
  }).join();
  EXPECT_FALSE(depot.ReserveWanted());
  const size_t ready =
      depot.FreeCells() + depot.ReserveChunks() * depot.CellsPerChunk();
  EXPECT_GE(ready, kTarget * depot.CellsPerChunk());
  EXPECT_LT(ready, (kTarget + 1) * depot.CellsPerChunk());
  FreeOnAThread<Pool>(cells);
}

// n cells from `allocate`, in slices of 1024 with `between()` before each;
// and the page faults the calling thread took in the allocations after the
// first (which maps the first chunk: nothing has been asked for yet).
template <typename Allocate, typename Between>
std::pair<int64_t, std::vector<void*>> Produce(Allocate allocate, size_t n,
                                               Between between) {
  std::vector<void*> cells(n);  // faulted in before the count starts
  cells[0] = allocate();
  int64_t faults = 0;
  for (size_t i = 1; i < n; i += 1024) {
    between();
    const int64_t before = ThreadMinorFaults();
    for (size_t j = i; j < i + 1024 && j < n; ++j) cells[j] = allocate();
    faults += ThreadMinorFaults() - before;
  }
  return {faults, std::move(cells)};
}

// The point of it all: a producer whose reserve is kept filled by another
// thread takes its cells without page faults; one that is not, faults every
// chunk in itself (at least once per chunk, once per page without huge
// pages).
TEST(PoolPrefaultTest, AProducerServedByAnotherThreadTakesNoPageFaults) {
  using Served = CellPool<Tag<4>, 64>;
  using Alone = CellPool<Tag<5>, 64>;
  constexpr size_t kChunks = 6;
  // The "worker": replenishes Served's depot whenever asked, on its thread.
  std::atomic<int> asked{0}, answered{0};
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop.load()) {
      if (answered.load() < asked.load()) {
        while (Served::Depot().Replenish()) {
        }
        answered.fetch_add(1);
      }
      std::this_thread::yield();
    }
  });
  const size_t n = kChunks * Served::Depot().CellsPerChunk();
  int64_t served_faults = 0, alone_faults = 0;
  std::vector<void*> served_cells, alone_cells;
  std::thread([&] {
    auto [faults, cells] = Produce([] { return Served::Allocate(); }, n,
                                   [&] {
                                     // Between slices, hand a shortfall over
                                     // and wait for the answer: the worker is
                                     // never late here, so every chunk is ready
                                     // in time.
                                     if (!Served::Depot().ReserveWanted())
                                       return;
                                     asked.fetch_add(1);
                                     while (answered.load() < asked.load())
                                       std::this_thread::yield();
                                   });
    served_faults = faults;
    served_cells = std::move(cells);
  }).join();
  std::thread([&] {
    auto [faults, cells] = Produce([] { return Alone::Allocate(); }, n, [] {});
    alone_faults = faults;
    alone_cells = std::move(cells);
  }).join();
  stop.store(true);
  worker.join();
  EXPECT_GE(Served::Depot().MappedBytes(), kChunks * kChunkBytes);
  EXPECT_EQ(Alone::Depot().MappedBytes(), kChunks * kChunkBytes);
  if (kFaultsAreOurs) {
    // Served: a few faults at most (the depot's own bookkeeping growing),
    // not one per chunk. Alone: every chunk after the first faulted in here.
    EXPECT_LE(served_faults, 4);
    EXPECT_GE(alone_faults, static_cast<int64_t>(kChunks - 1));
  }
  FreeOnAThread<Served>(served_cells);
  FreeOnAThread<Alone>(alone_cells);
}

TEST(PoolPrefaultTest, ProducersNeverWaitForAnAbsentReplenisher) {
  using Pool = CellPool<Tag<6>, 64>;
  // Nobody calls Replenish(): the producer maps every chunk itself.
  const std::vector<void*> cells =
      AllocateOnAThread<Pool>(3 * Pool::Depot().CellsPerChunk() + 10, 0x22, 64);
  EXPECT_TRUE(Pool::Depot().ReserveWanted());
  EXPECT_EQ(Pool::Depot().MappedBytes(), 4 * kChunkBytes);
  FreeOnAThread<Pool>(cells);
}

}  // namespace
}  // namespace tickwheel::internal
