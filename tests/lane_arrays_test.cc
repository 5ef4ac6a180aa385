// Tests for worker/lane_arrays.h: arrays are handed on, never freed, and
// kept apart by size.

#include "tickwheel/worker/lane_arrays.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

bool AllZero(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

TEST(LaneArraysTest, FreshArraysAreZeroedAndAligned) {
  bool reused = true;
  void* a = TakeLaneArray(4096, &reused);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(reused);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_TRUE(AllZero(a, 4096));
  GiveLaneArray(a, 4096);
}

TEST(LaneArraysTest, AGivenBackArrayGoesToTheNextTakerOfItsSize) {
  bool reused = false;
  void* a = TakeLaneArray(8192, &reused);
  ASSERT_NE(a, nullptr);
  std::memset(a, 0xAB, 8192);  // what its lane left behind
  const size_t free_before = FreeLaneArrays();
  GiveLaneArray(a, 8192);
  EXPECT_EQ(FreeLaneArrays(), free_before + 1);

  void* other = TakeLaneArray(8192 + 64, &reused);  // another size
  EXPECT_FALSE(reused);
  EXPECT_NE(other, a);
  void* again = TakeLaneArray(8192, &reused);
  EXPECT_TRUE(reused);
  EXPECT_EQ(again, a) << "the same memory: lane cells stay lane cells";
  EXPECT_EQ(FreeLaneArrays(), free_before);
  GiveLaneArray(other, 8192 + 64);
  GiveLaneArray(again, 8192);
}

TEST(LaneArraysTest, ThreadsTakeAndGiveConcurrently) {
  // Run under TSan by the CI: the free list is the only shared state.
  constexpr int kThreads = 4, kRounds = 2000;
  const size_t free_before = FreeLaneArrays();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kRounds; ++i) {
        bool reused = false;
        void* a = TakeLaneArray(1024, &reused);
        ASSERT_NE(a, nullptr);
        static_cast<unsigned char*>(a)[i % 1024] = 1;  // owned exclusively
        GiveLaneArray(a, 1024);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Never more arrays than takers at once: each take reuses a free one.
  EXPECT_LE(FreeLaneArrays() - free_before, static_cast<size_t>(kThreads));
}

}  // namespace
}  // namespace tickwheel::internal
