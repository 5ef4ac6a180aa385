// tests/cell_pool_test.cc
// CellPool: cells are distinct, aligned and reusable; a cell freed on another
// thread is reused; freed memory is handed out again in address order; a
// thread's cached cells come back when it exits; a thread that holds its
// frees gives them back when the hold ends, past its cap, or at exit;
// threads that find the depot empty at once fault at most two chunks in;
// many threads allocating and freeing each other's cells (TSan covers the
// depot). Faulting memory in ahead of need is in pool_prefault_test; giving
// it back, pool_decay_test.

#include "tickwheel/worker/cell_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "tickwheel/worker/chunk.h"

namespace tickwheel::internal {
namespace {

// Each test uses its own pool, so that counts are not disturbed by others.
template <int N>
struct Tag {};

TEST(CellPoolTest, CellsAreDistinctAlignedAndWritable) {
  using Pool = CellPool<Tag<1>, 64>;
  std::vector<void*> cells;
  for (int i = 0; i < 3000; ++i) {
    void* p = Pool::Allocate();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    std::memset(p, i & 0xFF, 64);
    cells.push_back(p);
  }
  std::set<void*> unique(cells.begin(), cells.end());
  EXPECT_EQ(unique.size(), cells.size());
  // No two cells overlap: sorted, each starts at least 64 bytes after the last.
  std::vector<uintptr_t> sorted;
  for (void* p : cells) sorted.push_back(reinterpret_cast<uintptr_t>(p));
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_GE(sorted[i] - sorted[i - 1], 64u);
  }
  for (int i = 0; i < 3000; ++i) {
    const auto* bytes = static_cast<const unsigned char*>(cells[i]);
    EXPECT_EQ(bytes[63], i & 0xFF) << "cell " << i << " was overwritten";
  }
  for (void* p : cells) Pool::Free(p);
}

TEST(CellPoolTest, CellsThatAreNotAPowerOfTwoComeBackToo) {
  using Pool = CellPool<Tag<8>, 80>;  // Give() divides instead of shifting
  std::vector<void*> cells;
  for (int round = 0; round < 3; ++round) {
    std::thread([&] {
      for (int i = 0; i < 30000; ++i) cells.push_back(Pool::Allocate());
      for (void* p : cells) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
        std::memset(p, 0xAB, 80);
        Pool::Free(p);
      }
      cells.clear();
    }).join();
  }
  EXPECT_EQ(Pool::Depot().MappedBytes(), 2 * kChunkBytes);
  EXPECT_EQ(Pool::Depot().FreeCells(), 2 * Pool::Depot().CellsPerChunk());
}

TEST(CellPoolTest, ReusesFreedCellsInsteadOfMappingMore) {
  using Pool = CellPool<Tag<2>, 64>;
  for (int round = 0; round < 50; ++round) {
    std::vector<void*> cells;
    for (int i = 0; i < 10000; ++i) cells.push_back(Pool::Allocate());
    for (void* p : cells) Pool::Free(p);
  }
  // 10,000 live cells at most: 640,000 bytes, one 2 MiB chunk.
  EXPECT_EQ(Pool::Depot().MappedBytes(), kChunkBytes);
}

TEST(CellPoolTest, LastFreedIsFirstReused) {
  using Pool = CellPool<Tag<3>, 64>;
  void* a = Pool::Allocate();
  Pool::Free(a);
  EXPECT_EQ(Pool::Allocate(), a);  // warm in this thread's cache
  Pool::Free(a);
}

TEST(CellPoolTest, CellsFreedOnAnotherThreadAreReused) {
  using Pool = CellPool<Tag<4>, 64>;
  constexpr int kCells = 100000;  // > one chunk, so reuse is visible
  std::vector<void*> cells;
  for (int i = 0; i < kCells; ++i) cells.push_back(Pool::Allocate());
  const size_t mapped = Pool::Depot().MappedBytes();
  // Another thread frees them all and exits: its cache goes to the depot.
  std::thread([&] {
    for (void* p : cells) Pool::Free(p);
  }).join();
  std::set<void*> before(cells.begin(), cells.end());
  cells.clear();
  for (int i = 0; i < kCells; ++i) cells.push_back(Pool::Allocate());
  EXPECT_EQ(Pool::Depot().MappedBytes(), mapped);
  int reused = 0;
  for (void* p : cells) reused += before.count(p) > 0;
  // This thread's leftover refill cells come first; the rest are reused.
  EXPECT_GE(reused, kCells - 2 * static_cast<int>(Pool::kBatch));
  for (void* p : cells) Pool::Free(p);
}

TEST(CellPoolTest, FreedCellsComeBackInAddressOrder) {
  using Pool = CellPool<Tag<7>, 64>;
  constexpr int kCells = 50000;  // two chunks
  std::vector<void*> cells;
  std::thread([&] {
    for (int i = 0; i < kCells; ++i) cells.push_back(Pool::Allocate());
  }).join();
  // Free them in a scrambled order (as timeouts die in deadline order), on
  // a thread that exits, so that every cell is back in the depot.
  std::vector<void*> scrambled = cells;
  for (size_t i = 0; i < scrambled.size(); ++i) {
    std::swap(scrambled[i], scrambled[(i * 7919 + 13) % scrambled.size()]);
  }
  std::thread([&] {
    for (void* p : scrambled) Pool::Free(p);
  }).join();
  EXPECT_EQ(Pool::Depot().FreeCells(), Pool::Depot().MappedBytes() /
                                           kChunkBytes *
                                           Pool::Depot().CellsPerChunk());
  // A fresh thread gets them back front to back, in the order fresh memory
  // was first handed out: chunk by chunk, ascending within a chunk.
  std::vector<void*> again;
  std::thread([&] {
    for (int i = 0; i < kCells; ++i) again.push_back(Pool::Allocate());
    for (void* p : again) Pool::Free(p);
  }).join();
  EXPECT_EQ(again, cells);
  for (size_t i = 1; i < again.size(); ++i) {
    const auto chunk = [](void* p) {
      return reinterpret_cast<uintptr_t>(p) / kChunkBytes;
    };
    if (chunk(again[i]) == chunk(again[i - 1])) {
      ASSERT_LT(again[i - 1], again[i]) << "at " << i;
    }
  }
}

TEST(CellPoolTest, ThreadsThatExitGiveTheirCacheBack) {
  using Pool = CellPool<Tag<5>, 128>;
  // Each short-lived thread allocates and frees a few cells; without the
  // flush at exit every thread would strand its batch and map more.
  for (int t = 0; t < 200; ++t) {
    std::thread([] {
      void* cells[10];
      for (void*& p : cells) p = Pool::Allocate();
      for (void* p : cells) Pool::Free(p);
    }).join();
  }
  EXPECT_EQ(Pool::Depot().MappedBytes(), kChunkBytes);
}

// A thread_local constructed before the thread's first pool use is
// destroyed after the pool's own flush at thread exit; what it frees or
// allocates then must go straight to the depot, not into a dead cache.
using LatePool = CellPool<Tag<9>, 64>;
struct LateUser {
  void* cell = nullptr;
  ~LateUser() {
    if (cell != nullptr) LatePool::Free(cell);
    LatePool::Free(LatePool::Allocate());
  }
};
thread_local LateUser late_user;

TEST(CellPoolTest, FreesAfterTheThreadsFlushGoToTheDepot) {
  std::thread([] {
    late_user.cell = nullptr;  // constructs late_user first
    late_user.cell = LatePool::Allocate();
    LatePool::Free(LatePool::Allocate());
  }).join();
  // Nothing is stranded in the exited thread's cache.
  EXPECT_EQ(LatePool::Depot().FreeCells(), LatePool::Depot().CellsPerChunk());
}

// A held free stays in the thread's cache until the hold ends (the wheel's
// walk over a burst), then goes back whole; past the cap it goes back as a
// free would without the hold; a thread that exits holding gives it back.
TEST(CellPoolTest, HeldFreesGoBackWhenTheHoldEnds) {
  using Pool = CellPool<Tag<20>, 64>;
  std::vector<void*> cells;
  for (int i = 0; i < 5000; ++i) cells.push_back(Pool::Allocate());
  const size_t before = Pool::Depot().FreeCells();
  Pool::HoldFrees();
  for (void* p : cells) Pool::Free(p);
  EXPECT_EQ(Pool::Depot().FreeCells(), before);  // twenty batches, all held
  Pool::ReturnHeld();
  EXPECT_EQ(Pool::Depot().FreeCells(), before + cells.size());
  // Without the hold, a batch goes back as soon as it is full.
  cells.clear();
  for (int i = 0; i < 600; ++i) cells.push_back(Pool::Allocate());
  const size_t after = Pool::Depot().FreeCells();
  for (void* p : cells) Pool::Free(p);
  EXPECT_EQ(Pool::Depot().FreeCells(), after + 2 * Pool::kBatch);
  Pool::ReturnHeld();  // holds nothing: changes nothing
  EXPECT_EQ(Pool::Depot().FreeCells(), after + 2 * Pool::kBatch);
}

TEST(CellPoolTest, AHoldGivesBackWhatPassesItsCap) {
  using Pool = CellPool<Tag<21>, 16>;
  const size_t n = Pool::kHoldCap + 1000;
  std::vector<void*> cells(n);
  for (void*& p : cells) p = Pool::Allocate();
  const size_t before = Pool::Depot().FreeCells();
  Pool::HoldFrees();
  for (void* p : cells) Pool::Free(p);
  // The cap's worth went back when the next free found the cache full.
  EXPECT_EQ(Pool::Depot().FreeCells(), before + Pool::kHoldCap);
  Pool::ReturnHeld();
  EXPECT_EQ(Pool::Depot().FreeCells(), before + n);
}

TEST(CellPoolTest, AThreadThatExitsHoldingGivesItBack) {
  using Pool = CellPool<Tag<22>, 64>;
  std::thread([] {
    std::vector<void*> cells;
    for (int i = 0; i < 3000; ++i) cells.push_back(Pool::Allocate());
    Pool::HoldFrees();
    for (void* p : cells) Pool::Free(p);
  }).join();
  EXPECT_EQ(Pool::Depot().FreeCells(), Pool::Depot().CellsPerChunk());
}

TEST(CellPoolTest, AChildForkedWhileOthersUseThePoolCanUseIt) {
#ifdef THREAD_SANITIZER
  GTEST_SKIP() << "TSan does not support fork() in a multithreaded process";
#endif
  using Pool = CellPool<Tag<11>, 64>;
  // What this test is about is the depot's mutex. Other one-time set-up
  // (the depot's function-local static, a thread's first thread_local
  // registration) has locks of its own that a fork() in the middle of it
  // would leave held, as for any lazily initialised static: finish it in
  // both threads before the first fork().
  Pool::Free(Pool::Allocate());
  std::atomic<bool> stop{false};
  std::atomic<bool> churning{false};
  // Keeps the depot's mutex busy: a batch goes back and forth all the time.
  std::thread churn([&] {
    std::vector<void*> cells;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 2000; ++i) cells.push_back(Pool::Allocate());
      for (void* p : cells) Pool::Free(p);
      cells.clear();
      churning.store(true, std::memory_order_release);
    }
  });
  while (!churning.load(std::memory_order_acquire)) std::this_thread::yield();
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10);  // a deadlock fails the test instead of hanging it
      std::vector<void*> cells;
      for (int i = 0; i < 5000; ++i) cells.push_back(Pool::Allocate());
      for (void* p : cells) Pool::Free(p);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status))
        << "child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
        << "): a depot mutex was inherited locked?";
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  stop.store(true);
  churn.join();
}

TEST(CellPoolTest, ThreadsThatFindTheDepotEmptyAtOnceGetDistinctCells) {
  using Pool = CellPool<Tag<13>, 64>;
  // Every thread starts on an empty depot, so each may fault a chunk in
  // outside the mutex at the same time; the chunks they add must not
  // overlap or be lost, and the spares serve later refills.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 40000;  // 2.5 MB per thread, ~5 chunks in all
  std::atomic<int> ready{0};
  std::vector<std::vector<void*>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        auto* cell = static_cast<int64_t*>(Pool::Allocate());
        ASSERT_NE(cell, nullptr);
        cell[0] = t;
        cell[7] = i;
        got[t].push_back(cell);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<void*> unique;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      auto* cell = static_cast<int64_t*>(got[t][i]);
      EXPECT_EQ(cell[0], t);  // nobody else was handed the same cell
      EXPECT_EQ(cell[7], i);
      unique.insert(cell);
    }
  }
  EXPECT_EQ(unique.size(), size_t{kThreads} * kPerThread);
  // What the cells need, plus at most one spare from the two threads that
  // may map at once.
  const size_t per_chunk = Pool::Depot().CellsPerChunk();
  const size_t needed =
      (size_t{kThreads} * kPerThread + per_chunk - 1) / per_chunk;
  EXPECT_LE(Pool::Depot().MappedBytes(), (needed + 1) * kChunkBytes);
  for (auto& cells : got) {
    for (void* p : cells) Pool::Free(p);
  }
}

TEST(CellPoolTest, ACrowdOnAnEmptyDepotMapsAtMostTwoChunks) {
  using Pool = CellPool<Tag<14>, 64>;
  // 16 threads that each want one cell arrive at an empty depot together.
  // Faulting a chunk in takes 0.1 ms or more, so on a machine with a core per
  // thread most of them would map one without a limit, and every spare would
  // stay in reserve for good. (With fewer cores than threads the crowd is
  // CPU-bound and rarely has more than two threads mapping at once: there
  // this checks the cells and the bound, and only sometimes the waiting.)
  constexpr int kThreads = 16;
  std::atomic<int> ready{0};
  std::vector<void*> got(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      got[t] = Pool::Allocate();
    });
  }
  for (auto& th : threads) th.join();
  std::set<void*> unique(got.begin(), got.end());
  EXPECT_EQ(unique.size(), size_t{kThreads});
  EXPECT_EQ(unique.count(nullptr), 0u);
  EXPECT_LE(Pool::Depot().MappedBytes(), 2 * kChunkBytes);
}

TEST(CellPoolTest, ProducersAndAConsumerExchangeCells) {
  using Pool = CellPool<Tag<6>, 64>;
  // The timer's pattern: producers allocate and hand cells to one thread,
  // which writes them and frees them. Each cell carries its owner's stamp.
  constexpr int kProducers = 2;
  constexpr int kPerProducer = 200000;
  std::atomic<void*> slots[kProducers];
  for (auto& s : slots) s.store(nullptr);
  std::atomic<int> finished{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kProducers; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto* cell = static_cast<int64_t*>(Pool::Allocate());
        cell[1] = t * int64_t{1} << 32 | i;
        void* expected = nullptr;
        while (!slots[t].compare_exchange_weak(expected, cell,
                                               std::memory_order_release)) {
          expected = nullptr;
          std::this_thread::yield();
        }
      }
      finished.fetch_add(1);
    });
  }
  int64_t received = 0;
  int64_t next[kProducers] = {};
  while (received < int64_t{kProducers} * kPerProducer) {
    for (int t = 0; t < kProducers; ++t) {
      auto* cell = static_cast<int64_t*>(
          slots[t].exchange(nullptr, std::memory_order_acquire));
      if (cell == nullptr) continue;
      ASSERT_EQ(cell[1], t * int64_t{1} << 32 | next[t]);
      ++next[t];
      ++received;
      Pool::Free(cell);
    }
  }
  for (auto& th : producers) th.join();
  // 400,000 cells went through (12 chunks' worth), but at most a few batches
  // per thread were ever live: one chunk, or one per producer when both
  // found the depot empty at once and each faulted one in (Take() maps
  // outside the mutex; the spare one stays in reserve).
  EXPECT_LE(Pool::Depot().MappedBytes(), kProducers * kChunkBytes);
}

}  // namespace
}  // namespace tickwheel::internal
