// tests/coro_sleep_local_test.cc
// -----------------------------------------------------------------------------
// Coroutine sleeps (timer/coro.h) on a LocalTimer, on a ManualClock: a sleep
// resumes inside the owner's advance(), in deadline order with the timer's
// tasks; a stop request resets it to now and never resumes it inline, from
// the owner thread or another; stop() and ~LocalTimer end suspended sleeps
// with FailedPrecondition before they return, and stop() does not return
// them; a sleep is one pending timeout that cancelAll() passes by.

#include <chrono>
#include <memory>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "tests/coro_test_util.h"
#include "tests/local_timer_test_util.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::AwaitSleep;
using ::tickwheel::testing::AwaitSleeps;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::Outcome;

constexpr int64_t kMs = 1'000'000;

TEST(CoroSleepLocalTest, ResumesInsideAdvanceWhenTheTimeComes) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(5)), &out);
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_EQ(t.timer->pollTimeoutMs(), 5);
  EXPECT_EQ(t.AdvanceTo(4 * kMs + 900'000), 0);
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(t.AdvanceTo(5 * kMs), 1);  // the resume counts as a run
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok()) << out.Status();
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
}

TEST(CoroSleepLocalTest, SleepUntilAndChronoOverloads) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  Outcome until, chrono;
  AwaitSleep(
      SleepUntil(*t.timer, t.timer->now() + std::chrono::milliseconds(3)),
      &until);
  AwaitSleep(SleepFor(*t.timer, std::chrono::microseconds(2500)), &chrono);
  t.AdvanceTo(2 * kMs);
  EXPECT_EQ(until.resumes.load() + chrono.resumes.load(), 0);
  t.AdvanceTo(2 * kMs + 500'000);
  EXPECT_EQ(chrono.resumes.load(), 1);
  EXPECT_EQ(until.resumes.load(), 0);
  t.AdvanceTo(3 * kMs);
  EXPECT_EQ(until.resumes.load(), 1);
  EXPECT_TRUE(until.Status().ok() && chrono.Status().ok());
  Outcome nan;
  AwaitSleep(SleepFor(*t.timer, std::chrono::duration<double>(std::nan(""))),
             &nan);
  ASSERT_EQ(nan.resumes.load(), 1);
  EXPECT_EQ(nan.Status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CoroSleepLocalTest, SleepsAndTasksResumeInDeadlineOrder) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  std::vector<int> order;
  struct Step {
    std::vector<int>* order;
    int id;
  };
  auto sleeper = [](LocalTimer& timer, absl::Duration d,
                    Step step) -> testing::Detached {
    absl::Status s = co_await SleepFor(timer, d);
    EXPECT_TRUE(s.ok()) << s;
    step.order->push_back(step.id);
  };
  sleeper(*t.timer, absl::Microseconds(300), {&order, 3});
  ASSERT_TRUE(t.timer
                  ->newTimeout([&order] { order.push_back(2); },
                               absl::Microseconds(200))
                  .ok());
  sleeper(*t.timer, absl::Microseconds(100), {&order, 1});
  EXPECT_EQ(t.AdvanceTo(kMs), 3);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(CoroSleepLocalTest, StopRequestedBeforeTheAwaitIsCancelledAtOnce) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::stop_source source;
  source.request_stop();
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(1), source.get_token()), &out);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// A stop request on the owner thread: the loop's next wait is 0, and the
// next advance() resumes the sleep, without waiting for the end of the tick
// (10 ms here) in which the request came.
TEST(CoroSleepLocalTest, StopRequestOnTheOwnerResumesInTheNextAdvance) {
  LocalTimerOptions options = LocalOptions();
  options.tick_duration = absl::Milliseconds(10);
  ManualLocalTimer t = MakeLocalTimer(options);
  std::stop_source source;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Hours(1), source.get_token()), &out);
  EXPECT_EQ(t.AdvanceTo(3 * kMs), 0);
  source.request_stop();
  EXPECT_EQ(out.resumes.load(), 0);  // never inside request_stop()
  EXPECT_EQ(t.timer->pollTimeoutMs(), 0);
  EXPECT_EQ(t.timer->nextWakeup(), t.timer->now());
  EXPECT_EQ(t.AdvanceTo(3 * kMs), 1);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepLocalTest, StopRequestFromAnotherThreadResumesOnTheOwner) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::stop_source source;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Hours(1), source.get_token()), &out);
  std::thread([&source] { source.request_stop(); }).join();
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(t.timer->pollTimeoutMs(), 1);
  EXPECT_EQ(t.AdvanceTo(kMs), 1);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
}

TEST(CoroSleepLocalTest, StopRequestAfterTheEndChangesNothing) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::stop_source source;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(1), source.get_token()),
             &out);
  t.AdvanceTo(2 * kMs);
  ASSERT_EQ(out.resumes.load(), 1);
  source.request_stop();
  EXPECT_EQ(t.AdvanceTo(3 * kMs), 0);
  EXPECT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
}

TEST(CoroSleepLocalTest, StopEndsSuspendedSleepsAndDoesNotReturnThem) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome a, b;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(1)), &a);
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(2)), &b);
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(3)).ok());
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);
  std::vector<Timeout> left = t.timer->stop();
  ASSERT_EQ(left.size(), 1u);  // only the application's timeout
  ASSERT_EQ(a.resumes.load(), 1);
  ASSERT_EQ(b.resumes.load(), 1);
  EXPECT_EQ(a.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  // A stopped timer fails the next sleep at the co_await.
  Outcome late;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(1)), &late);
  ASSERT_EQ(late.resumes.load(), 1);
  EXPECT_EQ(late.Status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CoroSleepLocalTest, ASleepEndedByStopMaySleepAgainAndFailsAtOnce) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome out;
  AwaitSleeps([&t] { return SleepFor(*t.timer, absl::Seconds(1)); }, 3, &out);
  t.timer->stop();
  ASSERT_EQ(out.resumes.load(), 1);  // the chain stops at the first error
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CoroSleepLocalTest, StopFromATaskEndsTheSleepsWhenAdvanceReturns) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(1)), &out);
  ASSERT_TRUE(t.timer
                  ->newTimeout([timer = t.timer.get()] { timer->stop(); },
                               absl::Milliseconds(1))
                  .ok());
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(2)).ok());
  EXPECT_EQ(t.AdvanceTo(2 * kMs), 1);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
  // The application's timeout comes back from the next stop().
  EXPECT_EQ(t.timer->stop().size(), 1u);
}

TEST(CoroSleepLocalTest, DestroyingTheTimerEndsSuspendedSleeps) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome out;
  LocalTimer* seen = nullptr;
  auto sleeper = [](LocalTimer& timer, Outcome* out,
                    LocalTimer** seen) -> testing::Detached {
    absl::Status s = co_await SleepFor(timer, absl::Seconds(1));
    // The timer is still whole here, and stopped.
    *seen = &timer;
    EXPECT_EQ(timer.pendingTimeouts(), 0);
    EXPECT_FALSE(timer.newTimeout([] {}, absl::Seconds(1)).ok());
    out->Record(std::move(s));
  };
  sleeper(*t.timer, &out, &seen);
  t.timer.reset();
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(seen, nullptr);
}

TEST(CoroSleepLocalTest, IsOnePendingTimeoutThatCancelAllPassesBy) {
  LocalTimerOptions options = LocalOptions();
  options.max_pending_timeouts = 2;
  ManualLocalTimer t = MakeLocalTimer(options);
  Outcome out, full;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(3)), &out);
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(1)).ok());
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(3)), &full);
  ASSERT_EQ(full.resumes.load(), 1);
  EXPECT_EQ(full.Status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(t.timer->cancelAll(), 1);  // the application's timeout only
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.AdvanceTo(4 * kMs);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
}

TEST(CoroSleepLocalTest, CancelAllFromATaskPassesASleepItsTaskStartedBy) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  Outcome out;
  ASSERT_TRUE(t.timer
                  ->newTimeout(
                      [&] {
                        // Scheduled during advance(): waits to be filed.
                        AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2)),
                                   &out);
                        EXPECT_EQ(t.timer->cancelAll(), 0);
                      },
                      absl::Milliseconds(1))
                  .ok());
  EXPECT_EQ(t.AdvanceTo(kMs), 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  EXPECT_EQ(out.resumes.load(), 0);
  t.AdvanceTo(4 * kMs);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
}

TEST(CoroSleepLocalTest, ZeroDelaysInARowEachResumeInALaterAdvance) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions(absl::ZeroDuration()));
  Outcome out;
  AwaitSleeps([&t] { return SleepFor(*t.timer, absl::ZeroDuration()); }, 3,
              &out);
  for (int i = 1; i <= 3; ++i) {
    // Each resume schedules the next sleep during advance(): it runs in the
    // next advance(), never in the one that scheduled it.
    EXPECT_EQ(t.timer->advance(), 1);
    EXPECT_EQ(out.resumes.load(), i);
  }
  EXPECT_EQ(t.timer->advance(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

}  // namespace
}  // namespace tickwheel
