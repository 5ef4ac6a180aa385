// tests/local_timer_owner_cancel_test.cc
// -----------------------------------------------------------------------------
// Timeout::cancel() on a LocalTimer's owner thread, from a task inside
// advance() too, settles a timeout its wheel holds on the spot: the task is
// destroyed, the slot given back and the cancel counted before cancel()
// returns, and nothing is left for the next advance() to clear. On other
// threads it takes the path every thread takes, and races with the owner's
// cancel exactly once. Time is a ManualClock; nothing here
// measures time.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;

TEST(LocalTimerOwnerCancel, SettlesTheTimeoutBeforeCancelReturns) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Seconds(30)).value();
  ASSERT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_TRUE(timeout.cancel());
  // No advance() in between: the captures, the slot and the count are
  // settled already, and the wheel holds nothing to wake for.
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  EXPECT_FALSE(t.timer->nextWakeup().has_value());
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
  EXPECT_FALSE(timeout.cancel());  // once
  EXPECT_EQ(t.AdvanceTo(60 * 1000 * kMs), 0);
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
}

TEST(LocalTimerOwnerCancel, ManyPairsBetweenTwoAdvancesLeaveTheWheelEmpty) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  constexpr int kPairs = 5000;
  for (int i = 0; i < kPairs; ++i) {
    // Spread over all levels of the wheel: 1 ms to about 80 minutes.
    const absl::Duration delay = absl::Milliseconds(1 + (i * 7919) % 5'000'000);
    Timeout timeout = t.timer->newTimeout([] {}, delay).value();
    ASSERT_TRUE(timeout.cancel()) << i;
    ASSERT_EQ(t.timer->pendingTimeouts(), 0) << i;
  }
  EXPECT_EQ(t.timer->metrics().cancelled, kPairs);
  EXPECT_FALSE(t.timer->nextWakeup().has_value());
  EXPECT_EQ(t.AdvanceTo(int64_t{6'000'000} * kMs), 0);
  EXPECT_EQ(t.timer->metrics().expired, 0);
}

TEST(LocalTimerOwnerCancel, LeavesTheOthersOfItsBucketInPlaceAndInOrder) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::vector<int> ran;
  std::vector<Timeout> timeouts;
  // Ten timeouts in one tick, every other one cancelled by the owner.
  for (int i = 0; i < 10; ++i) {
    timeouts.push_back(
        t.timer
            ->newTimeoutAt(
                [&ran, i] { ran.push_back(i); },
                t.timer->now() + std::chrono::microseconds(5000 + 10 * i))
            .value());
  }
  for (int i = 0; i < 10; i += 2) EXPECT_TRUE(timeouts[i].cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 5);
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 5);
  EXPECT_EQ(ran, (std::vector<int>{1, 3, 5, 7, 9}));
  EXPECT_EQ(t.timer->metrics().cancelled, 5);
}

TEST(LocalTimerOwnerCancel, FromATaskWaitsForTheWalkAndStillWinsAtOnce) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  auto victim_probe = std::make_shared<Probe>();
  Timeout victim =
      t.timer
          ->newTimeoutAt(ProbeTask(victim_probe),
                         t.timer->now() + std::chrono::milliseconds(2))
          .value();
  std::optional<bool> won;
  bool captures_gone_at_return = false;
  t.timer
      ->newTimeoutAt(
          [&] {
            won = victim.cancel();
            captures_gone_at_return = victim_probe->captures_destroyed.load();
          },
          t.timer->now() + std::chrono::milliseconds(1))
      .value();
  // Both are due in this advance(); the first cancels the second, which
  // the walk has not reached yet.
  EXPECT_EQ(t.AdvanceTo(5 * kMs), 1);
  ASSERT_TRUE(won.has_value());
  EXPECT_TRUE(*won);
  EXPECT_TRUE(captures_gone_at_return);
  EXPECT_EQ(victim_probe->runs.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  EXPECT_FALSE(t.timer->nextWakeup().has_value());
}

TEST(LocalTimerOwnerCancel, AfterAnEarlierResetTakesTheNoticeAndStaysExact) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Seconds(30)).value();
  // Earlier: the node waits in the wheel for the owner to move it.
  ASSERT_TRUE(timeout.reset(absl::Milliseconds(3)));
  EXPECT_TRUE(timeout.cancel());
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_FALSE(timeout.cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.AdvanceTo(40 * 1000 * kMs), 0);
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  EXPECT_FALSE(t.timer->nextWakeup().has_value());
}

TEST(LocalTimerOwnerCancel, GivesItsSlotBackUnderMaxPending) {
  LocalTimerOptions options = LocalOptions();
  options.max_pending_timeouts = 2;
  ManualLocalTimer t = MakeLocalTimer(std::move(options));
  Timeout a = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  Timeout b = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  EXPECT_EQ(t.timer->newTimeout([] {}, absl::Seconds(1)).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(a.cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  Timeout c = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_EQ(t.AdvanceTo(2000 * kMs), 2);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(LocalTimerOwnerCancel, AfterStopLoses) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Timeout timeout = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  std::vector<Timeout> left = t.timer->stop();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_FALSE(timeout.cancel());
  EXPECT_EQ(t.timer->metrics().cancelled, 0);
}

// The owner cancels each timeout while another thread cancels the same
// handle object: exactly one of them wins, and the counts agree. Run under
// TSan and with interleaving points (tools/test.sh's concurrency list).
TEST(LocalTimerOwnerCancel, RacesAnotherThreadsCancelExactlyOnce) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  constexpr int kRounds = 400;
  for (int i = 0; i < kRounds; ++i) {
    auto probe = std::make_shared<Probe>();
    Timeout timeout =
        t.timer->newTimeout(ProbeTask(probe), absl::Seconds(10)).value();
    std::atomic<bool> go{false};
    std::atomic<int> other_won{0};
    std::thread other([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      if (timeout.cancel()) other_won.store(1);
    });
    go.store(true, std::memory_order_release);
    const bool owner_won = timeout.cancel();
    other.join();
    ASSERT_EQ(int{owner_won} + other_won.load(), 1) << i;
    EXPECT_TRUE(probe->captures_destroyed.load()) << i;
    // The other thread's win reaches the wheel at the next advance().
    t.timer->advance();
    ASSERT_EQ(t.timer->pendingTimeouts(), 0) << i;
  }
  EXPECT_EQ(t.timer->metrics().cancelled, kRounds);
  EXPECT_FALSE(t.timer->nextWakeup().has_value());
  EXPECT_EQ(t.AdvanceTo(20 * 1000 * kMs), 0);
}

}  // namespace
}  // namespace tickwheel
