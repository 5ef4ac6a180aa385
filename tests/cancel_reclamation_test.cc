// tests/cancel_reclamation_test.cc
// -----------------------------------------------------------------------------
// Cancelled timeouts are reclaimed while the worker sleeps toward a far
// deadline: a server whose requests are all answered in time schedules and
// cancels millions of far deadlines, and nothing it cancels may wait for the
// next deadline to be freed. Rounds of schedule-then-cancel on a real clock,
// with one timeout far away that keeps the worker asleep between rounds:
//
//   * the process's resident memory stays flat round over round (compared
//     with itself, never with an absolute figure);
//   * metrics().cancelled counts every cancel, when it returns.
//
// Under ASan every node is its own heap block and freed blocks sit in ASan's
// quarantine, and under TSan resident memory is mostly the sanitizer's own
// shadow and history, which grow with every access: there the memory check
// is skipped, the rest runs.

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/base/config.h"
#include "tests/pool_test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::ResidentBytes;

TEST(CancelReclamationTest, CancelledTimeoutsDoNotPileUpWhileTheWorkerSleeps) {
  constexpr int kRounds = 8;
  constexpr int kPerRound = 200000;  // about 9.6 MB of nodes per round
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(100);
  auto timer = Timer::Create(options).value();
  // Due after the test: the worker plans to sleep until then, and every
  // timeout below is due later still, so none of them wakes it.
  Timeout anchor =
      timer->newTimeout([](const Timeout&) {}, absl::Seconds(120)).value();
  // Past the housekeeping wake-ups that follow queue traffic (one per tick
  // while it flows): from here on nothing due wakes the worker.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::vector<Timeout> batch;
  batch.reserve(kPerRound);
  std::vector<int64_t> rss;
  int64_t cancels = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound; ++i) {
      batch.push_back(
          timer->newTimeout([](const Timeout&) {}, absl::Seconds(150 + i % 50))
              .value());
    }
    for (const Timeout& t : batch) {
      ASSERT_TRUE(t.cancel());
      ++cancels;
    }
    batch.clear();
    ASSERT_EQ(timer->pendingTimeouts(), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rss.push_back(ResidentBytes());
  }
  EXPECT_EQ(timer->metrics().cancelled, cancels);
  for (size_t i = 0; i < rss.size(); ++i) {
    std::printf("round %zu: rss %.1f MB\n", i, rss[i] / 1e6);
  }
#if !defined(ABSL_HAVE_ADDRESS_SANITIZER) && \
    !defined(ABSL_HAVE_THREAD_SANITIZER)
  // After the first rounds have sized the pools and the wheel, more rounds
  // of the same traffic add nothing: piled-up nodes would add about 9.6 MB
  // per round. The margin allows for allocator noise.
  const int64_t settled = rss[2];
  for (int round = 3; round < kRounds; ++round) {
    EXPECT_LT(rss[round] - settled, 8 << 20)
        << "round " << round << " holds " << (rss[round] - settled) / 1e6
        << " MB more than round 2";
  }
#endif
  anchor.cancel();
}

}  // namespace
}  // namespace tickwheel
