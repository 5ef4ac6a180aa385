// Timer behaviour on a ManualClock: options, error codes, scheduling
// arithmetic (never early, within one tick, rounds), cancellation and the
// max-pending limit. Every wait is AwaitIdle(), so nothing here depends on the
// machine's speed.

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

constexpr int64_t kMs = 1000000;

TEST(TimerTest, NewTimeoutRejectsEmptyTask) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  absl::StatusOr<Timeout> r = t.timer->newTimeout(nullptr, absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.clock->SleeperCount(), 0);  // no thread was started for it
}

TEST(TimerTest, FireOnceNeverEarlyAndWithinOneTick) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 8));
  // Schedule at various offsets inside a tick, with delays crossing many
  // revolutions of the 8-bucket wheel (80 ms per revolution).
  struct Case {
    int64_t schedule_at;
    int64_t delay;
    std::shared_ptr<Probe> probe = std::make_shared<Probe>();
  };
  std::vector<Case> cases;
  for (int64_t at : {0, 3, 10, 17}) {
    for (int64_t delay : {0, 1, 9, 10, 11, 79, 80, 81, 250, 1234}) {
      cases.push_back({at * kMs, delay * kMs});
    }
  }
  int64_t now = 0;
  for (int64_t at : {0, 3, 10, 17}) {
    t.clock->AdvanceAndSettle(absl::Nanoseconds(at * kMs - now));
    now = at * kMs;
    for (Case& c : cases) {
      if (c.schedule_at != now) continue;
      ASSERT_TRUE(t.timer
                      ->newTimeout(ProbeTask(c.probe, t.clock),
                                   absl::Nanoseconds(c.delay))
                      .ok());
    }
  }
  // Step 1 ms at a time so that each run time is known to the millisecond.
  t.clock->AdvanceInSteps(absl::Milliseconds(1500), absl::Milliseconds(1));
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "at=" << c.schedule_at / kMs
                                    << "ms delay=" << c.delay / kMs << "ms");
    ASSERT_EQ(c.probe->runs.load(), 1);
    const int64_t lateness =
        c.probe->ran_at_nanos.load() - (c.schedule_at + c.delay);
    EXPECT_GE(lateness, 0);        // never early
    EXPECT_LE(lateness, 10 * kMs);  // within one tick
  }
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().expired, static_cast<int64_t>(cases.size()));
}

TEST(TimerTest, RunsAtTheFirstTickBoundaryAfterTheDeadline) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  auto exact = std::make_shared<Probe>();
  auto just_after = std::make_shared<Probe>();
  auto far = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(exact, t.clock), absl::Milliseconds(30)).value();
  t.timer->newTimeout(ProbeTask(just_after, t.clock), absl::Milliseconds(31))
      .value();
  // 4 buckets of 10 ms: 1000 revolutions away.
  t.timer->newTimeout(ProbeTask(far, t.clock), absl::Milliseconds(40000))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(40010), absl::Milliseconds(10));
  EXPECT_EQ(exact->ran_at_nanos.load(), 30 * kMs);
  EXPECT_EQ(just_after->ran_at_nanos.load(), 40 * kMs);
  EXPECT_EQ(far->ran_at_nanos.load(), 40000 * kMs);
}

TEST(TimerTest, NegativeAndZeroDelaysRunAtTheNextTick) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto negative = std::make_shared<Probe>();
  auto zero = std::make_shared<Probe>();
  auto minus_inf = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(negative, t.clock), absl::Seconds(-5)).value();
  t.timer->newTimeout(ProbeTask(zero, t.clock), absl::ZeroDuration()).value();
  t.timer->newTimeout(ProbeTask(minus_inf, t.clock), -absl::InfiniteDuration())
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(9));
  EXPECT_EQ(zero->runs.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(negative->ran_at_nanos.load(), 10 * kMs);
  EXPECT_EQ(zero->ran_at_nanos.load(), 10 * kMs);
  EXPECT_EQ(minus_inf->ran_at_nanos.load(), 10 * kMs);
}

TEST(TimerTest, HugeDelaysDoNotOverflowIntoThePast) {
  // A long tick keeps the worker's catch-up loop short while the clock jumps
  // by decades.
  auto t = MakeManualTimer(Tick(absl::Hours(24), 8));
  auto inf = std::make_shared<Probe>();
  auto huge = std::make_shared<Probe>();
  auto near_limit = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(inf), absl::InfiniteDuration()).value();
  t.timer->newTimeout(ProbeTask(huge), absl::Hours(24 * 365 * 200)).value();
  t.timer->newTimeout(ProbeTask(near_limit), absl::Nanoseconds(INT64_MAX - 1))
      .value();
  t.clock->AdvanceAndSettle(absl::Hours(24 * 365 * 100));  // 100 years
  EXPECT_EQ(inf->runs.load(), 0);
  EXPECT_EQ(huge->runs.load(), 0);
  EXPECT_EQ(near_limit->runs.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);
  t.clock->AdvanceAndSettle(absl::Hours(24 * 365 * 101));  // 201 years
  EXPECT_EQ(huge->runs.load(), 1);
  EXPECT_EQ(inf->runs.load(), 0);
  EXPECT_EQ(t.timer->stop().value().size(), 2u);
}

TEST(TimerTest, CancelBeforeExpiryDestroysCapturesAtOnce) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Seconds(30)).value();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_TRUE(timeout.cancel());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);  // reflected when cancel returns
  EXPECT_TRUE(timeout.isCancelled());
  EXPECT_FALSE(timeout.isExpired());
  EXPECT_TRUE(probe->captures_destroyed.load());  // by cancel() itself
  EXPECT_FALSE(timeout.cancel());  // only the first cancel wins
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  t.clock->AdvanceInSteps(absl::Seconds(31), absl::Seconds(1));
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(timeout.takeTask() == nullptr);
}

TEST(TimerTest, CancelAfterExpiryReturnsFalse) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_TRUE(timeout.isExpired());
  EXPECT_FALSE(timeout.cancel());
  EXPECT_FALSE(timeout.isCancelled());
  EXPECT_TRUE(probe->captures_destroyed.load());  // destroyed after its run
}

TEST(TimerTest, CancelWhileStillInThePendingQueue) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  // Scheduled and cancelled within one tick: the worker meets the node first
  // in the cancellation queue, then in the pending queue.
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(1)).value();
  ASSERT_TRUE(timeout.cancel());
  t.clock->AdvanceInSteps(absl::Milliseconds(50), absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(probe->captures_destroyed.load());
}

TEST(TimerTest, MaxPendingIsEnforcedAndSlotsAreReleased) {
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.max_pending_timeouts = 3;
  auto t = MakeManualTimer(options);
  std::vector<Timeout> timeouts;
  for (int i = 0; i < 3; ++i) {
    timeouts.push_back(
        t.timer->newTimeout([](const Timeout&) {}, absl::Milliseconds(15 + i * 100))
            .value());
  }
  absl::Status full =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("(4)"), std::string::npos) << full;
  EXPECT_NE(full.message().find("(3)"), std::string::npos) << full;
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);

  // A cancel frees its slot as soon as it returns.
  ASSERT_TRUE(timeouts[2].cancel());
  EXPECT_TRUE(t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
  EXPECT_FALSE(t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
  // An expiry frees its slot too.
  t.clock->AdvanceAndSettle(absl::Milliseconds(20));
  EXPECT_TRUE(timeouts[0].isExpired());
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_TRUE(t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).ok());
}

TEST(TimerTest, TasksMayScheduleAndCancelOnTheirOwnTimer) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto second = std::make_shared<Probe>();
  auto victim = std::make_shared<Probe>();
  Timeout victim_timeout =
      t.timer->newTimeout(ProbeTask(victim), absl::Milliseconds(100)).value();
  t.timer
      ->newTimeout(
          [&, second](const Timeout& self) {
            EXPECT_EQ(self.timer(), t.timer.get());
            EXPECT_TRUE(self.isExpired());
            EXPECT_TRUE(victim_timeout.cancel());
            ASSERT_TRUE(self.timer()
                            ->newTimeout(ProbeTask(second, t.clock),
                                         absl::Milliseconds(20))
                            .ok());
          },
          absl::Milliseconds(10))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(200), absl::Milliseconds(10));
  EXPECT_EQ(victim->runs.load(), 0);
  EXPECT_EQ(second->runs.load(), 1);
  EXPECT_EQ(second->ran_at_nanos.load(), 30 * kMs);
}

TEST(TimerTest, WorkerCatchesUpMissedTicksInOrder) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  std::vector<int> order;  // written by the worker only
  for (int i : {7, 3, 9, 1, 5}) {
    t.timer
        ->newTimeout([&order, i](const Timeout&) { order.push_back(i); },
                     absl::Milliseconds(i * 30))
        .value();
  }
  t.clock->AdvanceAndSettle(absl::Seconds(1));  // one jump over 100 ticks
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5, 7, 9}));
  const TimerMetrics m = t.timer->metrics();
  EXPECT_EQ(m.ticks, 100);
  EXPECT_EQ(m.catch_up_ticks, 5);  // the five ticks that had work
  EXPECT_GE(m.worst_lateness, absl::Milliseconds(700));
}

TEST(TimerTest, ChronoOverload) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe, t.clock), std::chrono::milliseconds(25))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(50), absl::Milliseconds(10));
  EXPECT_EQ(probe->ran_at_nanos.load(), 30 * kMs);
}

TEST(TimerTest, EmptyHandleIsInert) {
  Timeout empty;
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_EQ(empty.timer(), nullptr);
  EXPECT_FALSE(empty.isExpired());
  EXPECT_FALSE(empty.isCancelled());
  EXPECT_FALSE(empty.cancel());
  EXPECT_TRUE(empty.takeTask() == nullptr);
}

TEST(TimerTest, HandlesAreCheapSharedReferences) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  Timeout a = t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).value();
  Timeout b = a;
  Timeout c;
  c = b;
  EXPECT_TRUE(a == b && b == c);
  EXPECT_TRUE(c.cancel());
  EXPECT_TRUE(a.isCancelled());
  Timeout moved = std::move(a);
  EXPECT_TRUE(moved.isCancelled());
  EXPECT_EQ(moved.timer(), t.timer.get());
}

TEST(TimerTest, MetricsFormatWithFmt) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  t.timer->newTimeout([](const Timeout&) {}, absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  const std::string text = fmt::format("{}", t.timer->metrics());
  EXPECT_NE(text.find("expired=1"), std::string::npos) << text;
  EXPECT_NE(text.find("ticks=1"), std::string::npos) << text;
  EXPECT_EQ(text, t.timer->metrics().ToString());
}

}  // namespace
}  // namespace tickwheel
