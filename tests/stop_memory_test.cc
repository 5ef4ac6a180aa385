// tests/stop_memory_test.cc
// -----------------------------------------------------------------------------
// Memory after stop() comes back as it does after cancel(): once the caller
// drops the timeouts a stop() returned, the nodes' memory goes back to the
// kernel (no worker is left to decay it later, so it goes at once), and
// stop()'s own buffers of one entry per timeout leave no heap behind them.
// (The vector stop() returns is the caller's: whether glibc gives its pages
// back when the caller frees it depends on the caller's own heap, as for any
// vector; here it is the first large block freed, so glibc maps it.)
// Checked on resident memory, without sanitizers (whose allocators keep
// their own); the real clock, since only its workers drive the node pool.

#include <cstdint>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "tests/pool_test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kResidentMemoryIsOurs;
using ::tickwheel::testing::ResidentBytes;

TEST(StopMemoryTest, MemoryOfWhatStopReturnedLeavesWhenTheCallerDropsIt) {
  constexpr int kTimeouts = 1000000;  // about 90 MB while pending
  const int64_t before = ResidentBytes();
  int64_t pending_rss = 0;
  {
    auto timer = Timer::Create().value();
    std::vector<Timeout> handles;
    handles.reserve(kTimeouts);
    for (int i = 0; i < kTimeouts; ++i) {
      handles.push_back(
          timer->newTimeout([] {}, absl::Seconds(3600 + i % 60)).value());
    }
    pending_rss = ResidentBytes();
    {
      std::vector<Timeout> left = timer->stop().value();
      ASSERT_EQ(left.size(), static_cast<size_t>(kTimeouts));
      EXPECT_TRUE(left.front().isCancelled());
    }
  }  // what stop() returned, the handles and the timer go
  const int64_t after = ResidentBytes();
  std::printf("rss: before %.1f MB, pending %.1f MB, after %.1f MB\n",
              before / 1e6, pending_rss / 1e6, after / 1e6);
  if (!kResidentMemoryIsOurs) GTEST_SKIP() << "sanitizer allocators";
  // What stays: the pool's floor of two 2 MiB chunks, thread caches, the
  // lanes and allocator noise; the nodes alone were 64 MB, stop()'s
  // buffers 32 MB more.
  EXPECT_LT(after - before, 16 << 20)
      << (after - before) / 1e6 << " MB still resident";
}

}  // namespace
}  // namespace tickwheel
