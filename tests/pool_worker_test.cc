// tests/pool_worker_test.cc
// -----------------------------------------------------------------------------
// A Timer on the real clock and the node pool: its worker faults node memory
// in ahead of the producers (a producer scheduling chunk after chunk takes no
// page faults for it), and gives retained memory back once it has gone
// unused for the decay period, waking once for that and not again while
// nothing is due. On the real clock (tag "timing"): every wait is bounded
// generously, and no duration is asserted.

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "tests/pool_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/cell_depot.h"
#include "tickwheel/worker/cell_pool.h"
#include "tickwheel/worker/chunk.h"
#include "tickwheel/worker/chunk_policy.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel {
namespace {

using internal::CellDepot;
using internal::DecayPolicy;
using internal::kChunkBytes;
using internal::NodePool;
using internal::TimeoutNode;
using ::tickwheel::testing::kFaultsAreOurs;
using ::tickwheel::testing::kResidentMemoryIsOurs;
using ::tickwheel::testing::ResidentBytes;
using ::tickwheel::testing::ThreadMinorFaults;
using ::tickwheel::testing::WaitUntil;

void Noop(const Timeout&) {}

TEST(PoolWorkerTest, TheWorkerFaultsNodeMemoryInOffTheProducersThread) {
  if (!TimeoutNode::kPooled) GTEST_SKIP() << "nodes bypass the pool here";
  auto timer = Timer::Create().value();
  CellDepot& depot = NodePool::Depot();
  const size_t per_chunk = depot.CellsPerChunk();
  const size_t per_round = per_chunk / 2;
  constexpr int kRounds = 8;
  int64_t faults = 0;
  bool served = true;
  std::thread([&] {
    // The thread's first timeout sets up its lane and cache: not counted.
    ASSERT_TRUE(timer->newTimeout(Noop, absl::Hours(1)).ok());
    for (int round = 0; round < kRounds; ++round) {
      // Half a chunk per round, once the worker has made at least that
      // much ready (plus what a refill takes at once): no round then needs
      // to map memory itself, however the threads are scheduled.
      served &= WaitUntil([&] {
        return depot.FreeCells() + depot.ReserveChunks() * per_chunk >=
               per_round + 2 * NodePool::kBatch;
      });
      const int64_t before = ThreadMinorFaults();
      for (size_t i = 0; i < per_round; ++i) {
        ASSERT_TRUE(timer->newTimeout(Noop, absl::Hours(1)).ok());
      }
      faults += ThreadMinorFaults() - before;
    }
  }).join();
  EXPECT_TRUE(served) << "the worker did not fault memory in within 30 s";
  // Four chunks' worth of nodes: a page fault for each of their pages (or
  // one per chunk with huge pages) had the producer faulted them in. What
  // is left is the producer's lane filling up for the first time.
  RecordProperty("producer_page_faults", static_cast<int>(faults));
  if (kFaultsAreOurs) {
    EXPECT_LE(faults, 64);
  }
  EXPECT_EQ(timer->pendingTimeouts(), 1 + kRounds * int64_t(per_round));
}

TEST(PoolWorkerTest, RetainedMemoryGoesBackOnceUnusedAndThenTheWorkerSleeps) {
  if (!TimeoutNode::kPooled) GTEST_SKIP() << "nodes bypass the pool here";
  CellDepot& depot = NodePool::Depot();
  auto timer = Timer::Create().value();
  ASSERT_TRUE(timer->newTimeout(Noop, absl::Hours(2)).ok());  // starts it
  constexpr int kTimeouts = 500000;                           // a dozen chunks
  std::vector<Timeout> timeouts;
  timeouts.reserve(kTimeouts);
  const int64_t rss_before = ResidentBytes();
  for (int i = 0; i < kTimeouts; ++i) {
    timeouts.push_back(timer->newTimeout(Noop, absl::Hours(1)).value());
  }
  EXPECT_GE(depot.ResidentChunks(), kTimeouts / depot.CellsPerChunk());
  for (Timeout& t : timeouts) ASSERT_TRUE(t.cancel());
  timeouts.clear();
  timeouts.shrink_to_fit();
  // Nothing else happens: the worker, asleep toward a timeout two hours
  // away, gives the memory back once it has gone unused for the period.
  // What stays: the floor, and chunks that hold cells cached by a thread
  // (this one's and the worker's).
  const bool released = WaitUntil([&] {
    return depot.ResidentChunks() <= DecayPolicy::kKeptFreeChunks + 3 &&
           depot.NextDecayNanos() == DecayPolicy::kNothingDue;
  });
  ASSERT_TRUE(released) << depot.ResidentChunks() << " chunks still resident";
  // RSS agrees, to within what the rest of the process may keep from the
  // round (the allocator's arenas, the lanes' and queues' blocks): far less
  // than the dozen chunks the round made resident.
  constexpr int64_t kRestOfTheProcess = int64_t{4} << 20;
  if (kResidentMemoryIsOurs) {
    EXPECT_LE(ResidentBytes() - rss_before,
              int64_t{DecayPolicy::kKeptFreeChunks + 3} * int64_t{kChunkBytes} +
                  kRestOfTheProcess);
  }
  // Down to the floor, nothing is due: the worker sleeps toward its
  // timeout, waking no more for the pool. A sleep the worker planned before
  // the last decay may still end once, so the count starts one decay period
  // later and must then stay put for a whole period.
  const auto period =
      std::chrono::nanoseconds(DecayPolicy::kDecayNanos + 500'000'000);
  std::this_thread::sleep_for(period);
  const int64_t wakeups = timer->metrics().wakeups;
  std::this_thread::sleep_for(period);
  EXPECT_EQ(timer->metrics().wakeups, wakeups);
  EXPECT_EQ(timer->pendingTimeouts(), 1);
}

}  // namespace
}  // namespace tickwheel
