// tests/never_early_test.cc
// -----------------------------------------------------------------------------
// "Never early" while reset() races the worker's expiry: a task never runs
// before the deadline its timeout holds when the worker claims it, whichever
// path claims it (the tick pass, the pass within a tick that a slack below
// the tick adds) and however close a reset() lands to the claim. Each task
// checks, as it runs, the clock against its own deadline(): once a one-shot
// task is claimed no reset() can succeed, so deadline() is the deadline the
// claim went by. (A periodic run may be reset() while it runs, which moves
// its next run; the claim itself, periodic runs included, is checked
// exactly in timeout_claim_test.cc.)
//
// The races are real threads against the worker; the ManualClock makes the
// clock stand still during each pass, so that "early" is exact, and the
// real-clock case does what a server does. How often a reset() lands inside
// the claim depends on the machine; under --config=interleave the marked
// steps of the claim yield and sleep, which makes it common.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;
using ::tickwheel::testing::WaitUntil;

// Counts runs, and runs that came before their timeout's deadline.
struct EarlyCount {
  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> early{0};
  std::atomic<int64_t> worst_early_nanos{0};

  void Check(const Timeout& t, TimePoint now) {
    runs.fetch_add(1);
    const int64_t early_by =
        std::chrono::nanoseconds(t.deadline() - now).count();
    if (early_by > 0) {
      early.fetch_add(1);
      int64_t cur = worst_early_nanos.load();
      while (cur < early_by &&
             !worst_early_nanos.compare_exchange_weak(cur, early_by)) {
      }
    }
  }
  std::string Report() const {
    return fmt::format("{} of {} runs were early, by up to {} ns", early.load(),
                       runs.load(), worst_early_nanos.load());
  }
};

// One round on a ManualClock: `n` timeouts due within the first `span` of a
// long tick; `resetters` threads move them, again and again, to later
// deadlines inside the same tick, while the main thread steps the clock
// through the span so that the worker's within-tick pass claims them as they
// come due.
void ResetRacesWithinTickExpiry(absl::Duration slack) {
  TimerOptions options = Tick(absl::Milliseconds(100), 64);
  options.slack = slack;
  ManualTimer t = MakeManualTimer(std::move(options));
  EarlyCount count;
  constexpr int kTimeouts = 400;
  constexpr int kSteps = 200;
  const absl::Duration step = absl::Microseconds(5);
  std::vector<Timeout> timeouts;
  for (int i = 0; i < kTimeouts; ++i) {
    const absl::Duration delay = step * (1 + i % kSteps);
    absl::StatusOr<Timeout> timeout = t.timer->newTimeout(
        [&count, clock = t.clock](const Timeout& self) {
          count.Check(self,
                      TimePoint(std::chrono::nanoseconds(clock->NowNanos())));
        },
        delay);
    ASSERT_TRUE(timeout.ok()) << timeout.status();
    timeouts.push_back(*std::move(timeout));
  }
  t.clock->AwaitIdle();  // all filed

  std::atomic<bool> done{false};
  std::vector<std::thread> resetters;
  for (int r = 0; r < 2; ++r) {
    resetters.emplace_back([&, r] {
      std::mt19937 rng(r + 1);
      std::uniform_int_distribution<int64_t> ahead(1, 20000);  // 1-20 µs
      while (!done.load(std::memory_order_relaxed)) {
        for (const Timeout& timeout : timeouts) {
          // Later than now, by a few steps at most: inside the tick, and due
          // while the clock is still being stepped.
          timeout.resetAt(TimePoint(
              std::chrono::nanoseconds(t.clock->NowNanos() + ahead(rng))));
        }
      }
    });
  }
  for (int s = 0; s < kSteps + 10; ++s) t.clock->AdvanceAndSettle(step);
  done = true;
  for (std::thread& th : resetters) th.join();
  // Whatever is left runs now; a reset() can no longer race it.
  t.clock->AdvanceAndSettle(absl::Milliseconds(200));
  EXPECT_EQ(count.early.load(), 0) << count.Report();
  EXPECT_EQ(count.runs.load(), kTimeouts) << count.Report();
}

TEST(NeverEarlyTest, ResetRacingExpiryWithinTheTickWithZeroSlack) {
  for (int round = 0; round < 5; ++round) {
    ResetRacesWithinTickExpiry(absl::ZeroDuration());
  }
}

TEST(NeverEarlyTest, ResetRacingExpiryWithinTheTickWithASmallSlack) {
  for (int round = 0; round < 5; ++round) {
    ResetRacesWithinTickExpiry(absl::Microseconds(3));
  }
}

// The default slack: tasks run at tick ends, and a reset() racing the tick
// pass must never let a task run before a deadline it moved past the tick.
TEST(NeverEarlyTest, ResetRacingTheTickPass) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1), 64));
  EarlyCount count;
  constexpr int kTimeouts = 2000;
  std::vector<Timeout> timeouts;
  for (int i = 0; i < kTimeouts; ++i) {
    absl::StatusOr<Timeout> timeout = t.timer->newTimeout(
        [&count, clock = t.clock](const Timeout& self) {
          count.Check(self,
                      TimePoint(std::chrono::nanoseconds(clock->NowNanos())));
        },
        absl::Milliseconds(1 + i % 20));
    ASSERT_TRUE(timeout.ok());
    timeouts.push_back(*std::move(timeout));
  }
  t.clock->AwaitIdle();
  std::atomic<bool> done{false};
  std::thread resetter([&] {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int64_t> ahead(1, 3 * 1000000);
    while (!done.load(std::memory_order_relaxed)) {
      for (const Timeout& timeout : timeouts) {
        timeout.resetAt(TimePoint(
            std::chrono::nanoseconds(t.clock->NowNanos() + ahead(rng))));
      }
    }
  });
  for (int s = 0; s < 40; ++s) t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  done = true;
  resetter.join();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(count.early.load(), 0) << count.Report();
  EXPECT_EQ(count.runs.load(), kTimeouts);
}

// What a server does: the real clock, slack 0, a 100 ms tick, and two
// threads moving timeouts to later deadlines while they expire. The check
// is exact (the task compares the clock with its own deadline); how many
// resets land inside a claim depends on the machine.
TEST(NeverEarlyTest, ResetRacingExpiryOnTheRealClock) {
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(100);
  options.slack = absl::ZeroDuration();
  std::unique_ptr<Timer> timer = Timer::Create(options).value();
  EarlyCount count;
  constexpr int kTimeouts = 4000;
  std::vector<Timeout> timeouts;
  for (int i = 0; i < kTimeouts; ++i) {
    absl::StatusOr<Timeout> timeout = timer->newTimeout(
        [&count](const Timeout& self) {
          count.Check(self, std::chrono::steady_clock::now());
        },
        absl::Microseconds(2000 + 10 * i));  // 2-42 ms from now
    ASSERT_TRUE(timeout.ok());
    timeouts.push_back(*std::move(timeout));
  }
  std::atomic<bool> done{false};
  std::vector<std::thread> resetters;
  for (int r = 0; r < 2; ++r) {
    resetters.emplace_back([&, r] {
      std::mt19937 rng(r + 11);
      std::uniform_int_distribution<int64_t> ahead(1000, 200000);  // 1-200 µs
      while (!done.load(std::memory_order_relaxed)) {
        for (const Timeout& timeout : timeouts) {
          timeout.resetAt(std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(ahead(rng)));
        }
      }
    });
  }
  // Until every task has run: each reset() keeps a timeout at most 200 µs
  // away, and a sweep of the resetters takes longer than that under load,
  // so they all come due; bounded generously for a loaded machine.
  WaitUntil([&] { return count.runs.load() >= kTimeouts; }, absl::Seconds(60));
  done = true;
  for (std::thread& th : resetters) th.join();
  timer->stop().IgnoreError();
  EXPECT_EQ(count.early.load(), 0) << count.Report();
}

}  // namespace
}  // namespace tickwheel
