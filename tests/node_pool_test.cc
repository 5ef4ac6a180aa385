// Tests of the block recycler behind TimeoutNode: blocks are distinct and
// usable, recycled, and may be freed on another thread than the one that
// allocated them (run under TSan by the CI; the pool itself is used directly
// here, since TimeoutNode bypasses it under the sanitizers).

#include "worker/node_pool.h"

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

constexpr size_t kSize = 88;

TEST(NodePoolTest, BlocksAreDistinctAlignedAndWritable) {
  std::set<void*> seen;
  std::vector<void*> blocks;
  for (int i = 0; i < 3 * NodePool::kBatch + 5; ++i) {
    void* b = NodePool::Allocate(kSize);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(b) % alignof(std::max_align_t), 0u);
    std::memset(b, 0xab, kSize);
    EXPECT_TRUE(seen.insert(b).second);
    blocks.push_back(b);
  }
  for (void* b : blocks) NodePool::Free(b, kSize);
}

TEST(NodePoolTest, FreedBlocksAreReused) {
  void* a = NodePool::Allocate(kSize);
  NodePool::Free(a, kSize);
  // Drain this thread's lists; the freed block must come back.
  bool reused = false;
  std::vector<void*> blocks;
  for (int i = 0; i < 4 * NodePool::kBatch && !reused; ++i) {
    blocks.push_back(NodePool::Allocate(kSize));
    reused = blocks.back() == a;
  }
  EXPECT_TRUE(reused);
  for (void* b : blocks) NodePool::Free(b, kSize);
}

TEST(NodePoolTest, ProducerAllocatesConsumerFrees) {
  // The timer's pattern: one thread allocates, another frees, and the blocks
  // travel back. Each block carries a value written by the producer and
  // checked by the consumer.
  constexpr int kBlocks = 50000;
  std::vector<std::atomic<void*>> handoff(kBlocks);
  std::thread producer([&] {
    for (int i = 0; i < kBlocks; ++i) {
      auto* b = static_cast<int*>(NodePool::Allocate(kSize));
      b[0] = i;
      handoff[i].store(b, std::memory_order_release);
    }
  });
  std::thread consumer([&] {
    for (int i = 0; i < kBlocks; ++i) {
      void* b;
      while ((b = handoff[i].load(std::memory_order_acquire)) == nullptr) {
        std::this_thread::yield();
      }
      ASSERT_EQ(static_cast<int*>(b)[0], i);
      static_cast<int*>(b)[1] = -i;  // the freeing thread writes too
      NodePool::Free(b, kSize);
    }
  });
  producer.join();
  consumer.join();
}

}  // namespace
}  // namespace tickwheel::internal
