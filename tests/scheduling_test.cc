// tests/scheduling_test.cc
// -----------------------------------------------------------------------------
// When newTimeout()'s task runs, on a ManualClock: once, at the first tick
// boundary at or after its deadline, so never early and less than a tick late,
// across many turns of the wheel; zero, negative and -infinite delays at the
// first tick, in the order scheduled; infinite and int64-sized delays never,
// without wrapping into the past, however long the timer has run. Also what
// newTimeout() refuses (an empty task), std::chrono delays, and tasks that
// schedule and cancel on their own timer. Every wait is a ManualClock
// settle, so nothing here depends on the machine's speed.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::StatusMentions;
using ::tickwheel::testing::Tick;

// Every nullable callable that is null counts as empty, and is refused before
// anything is started or counted: an empty TimerTask, nullptr, a null function
// pointer, an empty std::function (which, wrapped in a TimerTask, would
// throw bad_function_call on the worker instead).
TEST(SchedulingTest, EmptyTaskIsInvalidArgumentAndStartsNothing) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  const int64_t live = LiveTimerCount();
  absl::StatusOr<Timeout> r =
      t.timer->newTimeout(TimerTask(), absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StatusMentions(r.status(), "empty")) << r.status();
  EXPECT_EQ(t.timer->newTimeout(nullptr, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  void (*null_fn)(const Timeout&) = nullptr;
  EXPECT_EQ(t.timer->newTimeout(null_fn, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::function<void(const Timeout&)> empty_fn;
  EXPECT_EQ(t.timer->newTimeout(empty_fn, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer->newTimeout(std::move(empty_fn), std::chrono::seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.clock->SleeperCount(), 0) << "a rejected call started the worker";
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(LiveTimerCount(), live);

  // The same kinds of callable, not null, run.
  auto probe = std::make_shared<Probe>();
  std::function<void(const Timeout&)> fn = [probe](const Timeout&) {
    probe->runs.fetch_add(1);
  };
  ASSERT_TRUE(t.timer->newTimeout(fn, absl::Milliseconds(10)).ok());
  static std::atomic<int> fn_runs{0};
  void (*plain_fn)(const Timeout&) = [](const Timeout&) { ++fn_runs; };
  ASSERT_TRUE(t.timer->newTimeout(plain_fn, absl::Milliseconds(10)).ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_EQ(fn_runs.load(), 1);
}

TEST(SchedulingTest, FireOnceNeverEarlyAndWithinOneTick) {
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
    EXPECT_GE(lateness, 0);         // never early
    EXPECT_LE(lateness, 10 * kMs);  // within one tick
  }
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->metrics().expired, static_cast<int64_t>(cases.size()));
}

TEST(SchedulingTest, RunsAtTheFirstTickBoundaryAfterTheDeadline) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  auto exact = std::make_shared<Probe>();
  auto just_after = std::make_shared<Probe>();
  auto far = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(exact, t.clock), absl::Milliseconds(30))
      .value();
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

// Delays that are zero, negative or -infinite run when the first tick ends,
// in the order they were scheduled; infinite and beyond-int64 ones never run
// and come back from stop() with their tasks.
TEST(SchedulingTest, NonPositiveDelaysRunAtTheFirstTickAndInfiniteOnesNever) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10), 8));
  struct Run {
    int id;
    int64_t at;
  };
  std::mutex mu;
  std::vector<Run> runs;  // guarded by mu
  auto task = [&](int i) {
    return [&, i](const Timeout&) {
      std::lock_guard<std::mutex> lock(mu);
      runs.push_back({i, t.clock->NowNanos()});
    };
  };
  const absl::Duration soon[] = {
      absl::Nanoseconds(-1),     absl::ZeroDuration(),
      -absl::InfiniteDuration(), absl::Nanoseconds(INT64_MIN),
      absl::Seconds(-1e12),      absl::Seconds(-5)};
  const absl::Duration never[] = {absl::InfiniteDuration(),
                                  absl::Nanoseconds(INT64_MAX),
                                  absl::Hours(3000000), absl::Seconds(1e18)};
  int i = 0;
  for (absl::Duration d : soon) {
    ASSERT_TRUE(t.timer->newTimeout(task(i++), d).ok());
  }
  for (absl::Duration d : never) {
    ASSERT_TRUE(t.timer->newTimeout(task(i++), d).ok());
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(9));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(runs.empty()) << "ran before the first tick ended";
  }
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(runs.size(), std::size(soon));
    for (int k = 0; k < static_cast<int>(runs.size()); ++k) {
      EXPECT_EQ(runs[k].id, k) << "out of scheduling order";
      EXPECT_EQ(runs[k].at, 10 * kMs) << "task " << runs[k].id;
    }
  }
  t.clock->AdvanceInSteps(absl::Seconds(2), absl::Milliseconds(10));
  t.clock->AdvanceAndSettle(absl::Seconds(10));  // 1000 ticks at once
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(runs.size(), std::size(soon));
  }
  EXPECT_EQ(t.timer->pendingTimeouts(), static_cast<int64_t>(std::size(never)));
  std::vector<Timeout> left = t.timer->stop().value();
  ASSERT_EQ(left.size(), std::size(never));
  for (const Timeout& x : left) EXPECT_TRUE(x.takeTask() != nullptr);
}

// Scheduled at startTime: deadlines count from it and saturate at INT64_MAX
// ns (292 years). A long tick keeps the worker's catch-up loop short while the
// clock jumps by decades.
TEST(SchedulingTest, HugeDelaysDoNotOverflowIntoThePast) {
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

// After a century has passed, a delay near the int64 limit saturates at
// INT64_MAX ns after startTime instead of wrapping into the past. (A one-day
// tick keeps the worker's catch-up over the century short: it visits every
// tick.)
TEST(SchedulingTest, DelaysNearTheInt64LimitNeverWrap) {
  ManualTimer t = MakeManualTimer(Tick(absl::Hours(24), 4));
  auto first = std::make_shared<Probe>();
  ASSERT_TRUE(t.timer->newTimeout(ProbeTask(first), absl::ZeroDuration()).ok());
  t.clock->AdvanceAndSettle(absl::Hours(24 * 365 * 100));  // catch-up: a while
  EXPECT_EQ(first->runs.load(), 1);
  std::vector<std::shared_ptr<Probe>> probes;
  for (int64_t d :
       {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2 + 1, INT64_MAX - 999}) {
    probes.push_back(std::make_shared<Probe>());
    ASSERT_TRUE(
        t.timer->newTimeout(ProbeTask(probes.back()), absl::Nanoseconds(d))
            .ok());
  }
  t.clock->AdvanceAndSettle(absl::Hours(24));
  for (const auto& p : probes) EXPECT_EQ(p->runs.load(), 0);
  EXPECT_EQ(t.timer->stop().value().size(), probes.size());
  t.timer.reset();
  for (const auto& p : probes) EXPECT_TRUE(p->captures_destroyed.load());
}

TEST(SchedulingTest, ChronoDelaysAreHonoured) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe, t.clock), std::chrono::milliseconds(25))
      .value();
  t.clock->AdvanceInSteps(absl::Milliseconds(50), absl::Milliseconds(10));
  EXPECT_EQ(probe->ran_at_nanos.load(), 30 * kMs);
}

// A task runs on the worker thread and may call its own timer: it cancels a
// later timeout and schedules a child, which waits for its own deadline.
TEST(SchedulingTest, TasksMayScheduleAndCancelOnTheirOwnTimer) {
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

}  // namespace
}  // namespace tickwheel
