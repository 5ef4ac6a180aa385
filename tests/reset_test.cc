// tests/reset_test.cc
// -----------------------------------------------------------------------------
// Timeout::reset() and resetAt(): a pending timeout's deadline moves, earlier
// or later, with the same task and handle; the worker hears of a later
// deadline only when the old one comes, and of an earlier one at once. On a
// ManualClock, so every run time is exact.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::SettlePastHousekeeping;
using ::tickwheel::testing::Tick;

TEST(ResetTest, LaterDeadlinePostponesTheRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Milliseconds(10))
          .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(5));
  ASSERT_TRUE(timeout.reset(absl::Milliseconds(20)));  // now due at 25 ms
  EXPECT_EQ(timeout.deadline(), TimePoint(std::chrono::milliseconds(25)));
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceInSteps(absl::Milliseconds(19), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 0) << "ran at its old deadline";
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(probe->ran_at_nanos.load(), 25 * kMs);
  EXPECT_TRUE(timeout.isExpired());
}

TEST(ResetTest, LaterDeadlineCostsTheSleepingWorkerNothingUntilTheOldOne) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Milliseconds(50))
          .value();
  SettlePastHousekeeping(t);  // the worker sleeps until 50 ms
  const int64_t wakeups = t.timer->metrics().wakeups;
  for (int i = 1; i <= 100; ++i) {
    ASSERT_TRUE(timeout.reset(absl::Milliseconds(100 + i)));
  }
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, wakeups);
  t.clock->AdvanceInSteps(absl::Milliseconds(60), absl::Milliseconds(1));
  // Once, at the old deadline, to file it again; not at every tick.
  EXPECT_LE(t.timer->metrics().wakeups - wakeups, 2);
  EXPECT_EQ(probe->runs.load(), 0);
  t.clock->AdvanceInSteps(absl::Milliseconds(139), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(probe->ran_at_nanos.load(), 202 * kMs);  // reset at 2 ms + 200
}

TEST(ResetTest, EarlierDeadlineWakesTheWorkerAndRunsEarlier) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Seconds(10)).value();
  SettlePastHousekeeping(t);  // now 2 ms; the worker sleeps until 10 s
  const int64_t wakeups = t.timer->metrics().wakeups;
  ASSERT_TRUE(timeout.reset(absl::Milliseconds(5)));
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->metrics().wakeups, wakeups + 1);  // re-planned
  t.clock->AdvanceInSteps(absl::Milliseconds(5), absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(probe->ran_at_nanos.load(), 7 * kMs);
}

TEST(ResetTest, ResetBeforeTheWorkerFilesItTakesEffect) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto early = std::make_shared<Probe>();
  auto late = std::make_shared<Probe>();
  Timeout a =
      t.timer->newTimeout(ProbeTask(early, t.clock), absl::Seconds(1)).value();
  Timeout b =
      t.timer->newTimeout(ProbeTask(late, t.clock), absl::Milliseconds(3))
          .value();
  ASSERT_TRUE(a.reset(absl::Milliseconds(2)));
  ASSERT_TRUE(b.reset(absl::Milliseconds(4)));
  t.clock->AdvanceInSteps(absl::Milliseconds(10), absl::Milliseconds(1));
  EXPECT_EQ(early->ran_at_nanos.load(), 2 * kMs);
  EXPECT_EQ(late->ran_at_nanos.load(), 4 * kMs);
}

TEST(ResetTest, ResetAtInThePastRunsPromptly) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Seconds(10)).value();
  SettlePastHousekeeping(t);
  ASSERT_TRUE(timeout.resetAt(t.timer->now() - std::chrono::seconds(1)));
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(probe->runs.load(), 1);
}

TEST(ResetTest, OnlyAPendingTimeoutCanBeReset) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  EXPECT_FALSE(Timeout().reset(absl::Seconds(1)));
  EXPECT_EQ(Timeout().deadline(), TimePoint{});

  Timeout ran = t.timer->newTimeout([] {}, absl::Milliseconds(1)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  ASSERT_TRUE(ran.isExpired());
  const TimePoint ran_deadline = ran.deadline();
  EXPECT_FALSE(ran.reset(absl::Seconds(1)));
  EXPECT_EQ(ran.deadline(), ran_deadline) << "a failed reset changed it";

  Timeout cancelled = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  ASSERT_TRUE(cancelled.cancel());
  EXPECT_FALSE(cancelled.reset(absl::Seconds(2)));

  Timeout stopped = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  ASSERT_EQ(t.timer->stop().value().size(), 1u);
  EXPECT_FALSE(stopped.reset(absl::Seconds(2)));
  EXPECT_FALSE(stopped.resetAt(TimePoint{}));
}

TEST(ResetTest, AOneShotCannotResetItselfFromItsOwnTask) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::atomic<int> runs{0};
  std::atomic<bool> reset_result{true};
  t.timer
      ->newTimeout(
          [&](const Timeout& self) {
            ++runs;
            reset_result = self.reset(absl::Milliseconds(1));
          },
          absl::Milliseconds(1))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(5), absl::Milliseconds(1));
  EXPECT_EQ(runs.load(), 1);
  EXPECT_FALSE(reset_result.load());
}

TEST(ResetTest, KeepsPendingCountAndRunsExactlyOnce) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 50; ++i) {
    probes.push_back(std::make_shared<Probe>());
    timeouts.push_back(
        t.timer->newTimeout(ProbeTask(probes.back()), absl::Milliseconds(5))
            .value());
  }
  SettlePastHousekeeping(t);
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 50; ++i) {
      // Alternately later and earlier, all still in the future.
      ASSERT_TRUE(timeouts[i].reset(absl::Milliseconds(3 + (i + round) % 7)));
    }
    EXPECT_EQ(t.timer->pendingTimeouts(), 50);
    t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  }
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(1));
  for (const auto& p : probes) EXPECT_EQ(p->runs.load(), 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().expired, 50);
}

TEST(ResetTest, ChronoDurationsOfAnyKind) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  Timeout timeout = t.timer->newTimeout([] {}, std::chrono::hours(1)).value();
  ASSERT_TRUE(timeout.reset(std::chrono::duration<double>(0.5)));
  EXPECT_EQ(timeout.deadline(), TimePoint(std::chrono::milliseconds(500)));
  ASSERT_TRUE(timeout.reset(std::chrono::duration<int, std::milli>(250)));
  EXPECT_EQ(timeout.deadline(), TimePoint(std::chrono::milliseconds(250)));
  ASSERT_TRUE(timeout.reset(std::chrono::days(1)));
  EXPECT_EQ(timeout.deadline(), TimePoint(std::chrono::hours(24)));
  // Far past the int64 nanosecond range: saturates, never wraps.
  ASSERT_TRUE(timeout.reset(std::chrono::duration<double>(1e300)));
  EXPECT_EQ(DeadlineNanos(timeout), INT64_MAX);
}

// A worker that wakes late processes several ticks in one pass. A timeout
// moved later, to a tick inside that pass, still runs in it, in its tick's
// turn: before a timeout due after its new deadline.
TEST(ResetTest, LaterDeadlineInsideOneCatchUpPassRunsInThatPass) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  std::mutex mu;
  std::vector<int> order;
  auto log = [&](int id) {
    return [&mu, &order, id] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(id);
    };
  };
  Timeout moved = t.timer->newTimeout(log(1), absl::Milliseconds(10)).value();
  Timeout later = t.timer->newTimeout(log(2), absl::Milliseconds(45)).value();
  t.clock->AwaitIdle();  // both filed: `moved` at its first deadline
  ASSERT_TRUE(moved.reset(absl::Milliseconds(30)));
  t.clock->AdvanceAndSettle(absl::Milliseconds(60));  // one pass, ticks 0-5
  EXPECT_TRUE(moved.isExpired());
  EXPECT_TRUE(later.isExpired());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// Many timeouts moved later inside one catch-up pass, more than a pass ever
// had to stop its wheel for: each runs in its own tick's turn, so the pass
// runs them all in deadline order among the timeouts that were not moved.
TEST(ResetTest, ManyLaterDeadlinesInsideOneCatchUpPassKeepDeadlineOrder) {
  constexpr int kMoved = 300;
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::mutex mu;
  std::vector<int> order;
  auto log = [&](int id) {
    return [&mu, &order, id] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(id);
    };
  };
  std::vector<Timeout> moved;
  std::vector<Timeout> kept;
  for (int i = 0; i < kMoved; ++i) {
    moved.push_back(
        t.timer->newTimeout(log(2 * i), absl::Microseconds(500)).value());
    kept.push_back(
        t.timer
            ->newTimeout(log(2 * i + 1), absl::Milliseconds(2 * i + 2) +
                                             absl::Microseconds(500))
            .value());
  }
  t.clock->AwaitIdle();  // all filed: the moved ones in tick 0
  for (int i = 0; i < kMoved; ++i) {
    ASSERT_TRUE(moved[i].reset(absl::Milliseconds(2 * i + 1) +
                               absl::Microseconds(500)));
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(2 * kMoved + 10));
  std::vector<int> expected(2 * kMoved);
  for (int i = 0; i < 2 * kMoved; ++i) expected[i] = i;
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, expected);
}

}  // namespace
}  // namespace tickwheel
