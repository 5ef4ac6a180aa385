// tests/pending_count_test.cc
// -----------------------------------------------------------------------------
// pendingTimeouts() and max_pending_timeouts, on a ManualClock. The count is
// "scheduled and neither expired nor cancelled" (timer/timer.h): a cancel()
// gives its slot back before it returns, and an expiry gives it back before
// the task runs (Worker::Expire() releases the slot right after claiming the
// node, ahead of running the task or handing it to the executor), so that a
// running task, and every task expired before it in the same pass, no longer
// count. At the limit, newTimeout() gets ResourceExhausted naming both
// numbers, and the limit is never exceeded, not even for an instant, however
// many threads race for the last slots.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::StatusMentions;
using ::tickwheel::testing::Tick;

TEST(PendingCountTest, MaxPendingIsEnforcedAndSlotsAreReleased) {
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.max_pending_timeouts = 3;
  auto t = MakeManualTimer(options);
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 3; ++i) {
    timeouts.push_back(t.timer
                           ->newTimeout([](const Timeout&) {},
                                        absl::Milliseconds(15 + i * 100))
                           .value());
  }
  absl::Status full =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(StatusMentions(full, "(4)")) << full;
  EXPECT_TRUE(StatusMentions(full, "(3)")) << full;
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);

  // A cancel frees its slot as soon as it returns.
  ASSERT_TRUE(timeouts[2].cancel());
  EXPECT_TRUE(
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
  EXPECT_FALSE(
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
  // An expiry frees its slot too.
  t.clock->AdvanceAndSettle(absl::Milliseconds(20));
  EXPECT_TRUE(timeouts[0].isExpired());
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_TRUE(
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
}

// The periodic pattern at the limit: a task that reschedules itself finds its
// own slot free, and does not count itself as pending while it runs.
TEST(PendingCountTest, AnExpiredTasksSlotIsFreeWhenItRuns) {
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.max_pending_timeouts = 1;
  ManualTimer t = MakeManualTimer(options);
  absl::Status child = absl::UnknownError("task did not run");
  int64_t pending_in_task = -1;  // written by the worker, read once it sleeps
  ASSERT_TRUE(t.timer
                  ->newTimeout(
                      [&](const Timeout& self) {
                        pending_in_task = self.timer()->pendingTimeouts();
                        child = self.timer()
                                    ->newTimeout([](const Timeout&) {},
                                                 absl::Milliseconds(10))
                                    .status();
                      },
                      absl::Milliseconds(10))
                  .ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(pending_in_task, 0) << "the running task still counts as pending";
  EXPECT_TRUE(child.ok()) << child;
}

// One pass that catches up five ticks expires five tasks, one per tick: each
// sees only the tasks still to come, so the count drops task by task rather
// than at the end of the pass.
TEST(PendingCountTest, ACatchUpPassReleasesEachSlotBeforeItsTaskRuns) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  std::vector<int64_t> seen;  // worker thread; read after settling
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(t.timer
                    ->newTimeout(
                        [&](const Timeout& self) {
                          seen.push_back(self.timer()->pendingTimeouts());
                        },
                        absl::Milliseconds(10 * (i + 1)))
                    .ok());
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(50));  // one catch-up pass
  EXPECT_EQ(seen, (std::vector<int64_t>{4, 3, 2, 1, 0}));
}

// Many threads race for the last slots: exactly max_pending succeed, the
// others get ResourceExhausted naming both numbers, and an observer polling
// pendingTimeouts() never sees more than the limit. The ManualClock holds
// every accepted timeout until the test lets them expire, so the counts are
// exact.
TEST(PendingCountTest, MaxPendingFromManyThreadsIsNeverExceeded) {
  constexpr int64_t kMax = 64;
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.max_pending_timeouts = kMax;
  ManualTimer t = MakeManualTimer(options);
  std::atomic<bool> running{true};
  std::atomic<int64_t> worst{0};
  std::thread observer([&] {
    while (running.load()) {
      const int64_t n = t.timer->pendingTimeouts();
      if (n > worst.load()) worst.store(n);
      std::this_thread::yield();
    }
  });
  std::atomic<int64_t> accepted{0}, exhausted{0}, other{0};
  auto hammer = [&](int calls) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < calls; ++k) {
          auto r = t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1));
          if (r.ok()) {
            accepted++;
          } else if (r.status().code() ==
                         absl::StatusCode::kResourceExhausted &&
                     StatusMentions(r.status(), "max_pending_timeouts (64)") &&
                     StatusMentions(r.status(), "(65)")) {
            exhausted++;
          } else {
            other++;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
  };
  hammer(100);
  EXPECT_EQ(accepted.load(), kMax);
  EXPECT_EQ(exhausted.load(), 8 * 100 - kMax);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), kMax);
  // Expiry frees slots; the next wave again fills exactly to the limit.
  t.clock->AdvanceAndSettle(absl::Seconds(1));
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  hammer(50);
  EXPECT_EQ(accepted.load(), 2 * kMax);
  running.store(false);
  observer.join();
  EXPECT_LE(worst.load(), kMax);
  EXPECT_EQ(t.timer->stop().value().size(), static_cast<size_t>(kMax));
}

}  // namespace
}  // namespace tickwheel
