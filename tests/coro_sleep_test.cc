// tests/coro_sleep_test.cc
// -----------------------------------------------------------------------------
// Coroutine sleeps (timer/coro.h) on a ManualClock: each status co_await
// yields, where the coroutine resumes (the worker, the task_executor, the
// thread that stops the timer), that a stop request never resumes inline,
// and what a suspended sleep counts as. The races of a stop request, the
// expiry and stop() are in coro_sleep_races_test.cc.

#include <chrono>
#include <cmath>
#include <memory>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/functional/any_invocable.h"
#include "tests/coro_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::AwaitSleep;
using ::tickwheel::testing::AwaitSleeps;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Outcome;
using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::QueueExecutor;
using ::tickwheel::testing::Tick;

constexpr absl::Duration kTick = absl::Milliseconds(1);

// The worker thread's id, from a task that runs on it.
std::thread::id WorkerThread(ManualTimer& t) {
  auto id = std::make_shared<std::thread::id>();
  EXPECT_TRUE(t.timer
                  ->newTimeout([id] { *id = std::this_thread::get_id(); },
                               absl::ZeroDuration())
                  .ok());
  t.clock->AdvanceAndSettle(kTick);
  return *id;
}

TEST(CoroSleepTest, ResumesWithOkOnTheWorkerWhenTheTimeComes) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  const std::thread::id worker = WorkerThread(t);
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(5)), &out);
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  EXPECT_EQ(out.resumes.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok()) << out.Status();
  EXPECT_EQ(out.Thread(), worker);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepTest, SleepUntilResumesAtTheDeadline) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome out;
  AwaitSleep(
      SleepUntil(*t.timer, t.timer->now() + std::chrono::milliseconds(3)),
      &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  EXPECT_EQ(out.resumes.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok()) << out.Status();
}

TEST(CoroSleepTest, ChronoOverloads) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome millis, seconds, until;
  AwaitSleep(SleepFor(*t.timer, std::chrono::milliseconds(3)), &millis);
  AwaitSleep(SleepFor(*t.timer, std::chrono::duration<double>(0.0045)),
             &seconds);
  // A time point in milliseconds converts to TimePoint as it is passed.
  const auto deadline = std::chrono::time_point_cast<std::chrono::milliseconds>(
      t.timer->now() + std::chrono::milliseconds(3));
  AwaitSleep(SleepUntil(*t.timer, deadline), &until);
  EXPECT_EQ(t.timer->pendingTimeouts(), 3);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  EXPECT_EQ(millis.resumes.load() + seconds.resumes.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  EXPECT_EQ(millis.resumes.load(), 1);
  EXPECT_EQ(until.resumes.load(), 1);
  EXPECT_EQ(seconds.resumes.load(), 0);  // 4.5 ms: at the 5 ms tick end
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(seconds.resumes.load(), 1);
  EXPECT_TRUE(millis.Status().ok());
  EXPECT_TRUE(seconds.Status().ok());
  EXPECT_TRUE(until.Status().ok());
}

TEST(CoroSleepTest, NanDelayIsInvalidWithoutSuspending) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, std::chrono::duration<double>(std::nan(""))),
             &out);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepTest, StopRequestedBeforeTheAwaitIsCancelledWithoutSuspending) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  std::stop_source stop;
  stop.request_stop();
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(5), stop.get_token()), &out);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepTest, StopRequestedWhileSuspendedResumesOnTheWorkerNextTick) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  const std::thread::id worker = WorkerThread(t);
  std::stop_source stop;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(5), stop.get_token()), &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  ASSERT_EQ(out.resumes.load(), 0);
  EXPECT_TRUE(stop.request_stop());
  t.clock->AdvanceAndSettle(kTick);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
  // Not inside request_stop(): resumed by the worker, as an expired task.
  EXPECT_EQ(out.Thread(), worker);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepTest, StopRequestAfterTheEndChangesNothing) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  std::stop_source stop;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2), stop.get_token()), &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  ASSERT_EQ(out.resumes.load(), 1);
  stop.request_stop();  // the stop callback is gone with the sleep
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  EXPECT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok()) << out.Status();
}

TEST(CoroSleepTest, StopWhileSuspendedResumesBeforeStopReturns) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  std::stop_source stop;
  Outcome with_token, without;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(5), stop.get_token()),
             &with_token);
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(9)), &without);
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(7)).ok());
  t.clock->AdvanceAndSettle(kTick);
  absl::StatusOr<std::vector<Timeout>> left = t.timer->stop();
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 1u);  // the application's timeout, not the sleeps
  for (Outcome* out : {&with_token, &without}) {
    ASSERT_EQ(out->resumes.load(), 1);
    EXPECT_EQ(out->Status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(out->Thread(), std::this_thread::get_id());
  }
  stop.request_stop();
  EXPECT_EQ(with_token.resumes.load(), 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(CoroSleepTest, DestroyingTheTimerWhileSuspendedResumesTheSleep) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  std::stop_source stop;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(5), stop.get_token()), &out);
  t.clock->AdvanceAndSettle(kTick);
  t.timer.reset();
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
  stop.request_stop();
  EXPECT_EQ(out.resumes.load(), 1);
}

TEST(CoroSleepTest, StoppedTimerFailsWithoutSuspending) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  ASSERT_TRUE(t.timer->stop().ok());
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(1)), &out);
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.Thread(), std::this_thread::get_id());
}

testing::Detached SleepTwice(Timer* timer, Outcome* first, Outcome* second) {
  first->Record(co_await SleepFor(*timer, absl::Seconds(1)));
  second->Record(co_await SleepFor(*timer, absl::Seconds(1)));
}

TEST(CoroSleepTest, SleepingAgainInsideStopFailsAtOnce) {
  // A coroutine that stop() resumes runs inside stop(), outside its locks;
  // sleeping again there fails at once instead of suspending.
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome first, second;
  SleepTwice(t.timer.get(), &first, &second);
  EXPECT_TRUE(t.timer->stop().ok());
  ASSERT_EQ(first.resumes.load(), 1);
  ASSERT_EQ(second.resumes.load(), 1);
  EXPECT_EQ(first.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.Status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.Thread(), std::this_thread::get_id());
}

TEST(CoroSleepTest, MaxPendingReachedFailsWithoutSuspending) {
  TimerOptions options = Tick(kTick);
  options.max_pending_timeouts = 1;
  ManualTimer t = MakeManualTimer(options);
  Outcome first, second;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2)), &first);
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2)), &second);
  ASSERT_EQ(second.resumes.load(), 1);
  EXPECT_EQ(second.Status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(first.resumes.load(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  ASSERT_EQ(first.resumes.load(), 1);
  EXPECT_TRUE(first.Status().ok());
}

TEST(CoroSleepTest, IsOnePendingTimeoutThatCancelAllPassesBy) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(3)), &out);
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Milliseconds(3)).ok());
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  EXPECT_EQ(t.timer->cancelAll(), 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
}

TEST(CoroSleepTest, ZeroDelaysInARowEachResumeOnce) {
  // A zero delay on a running worker may end before co_await has finished
  // suspending: then the coroutine goes on by itself. Either way, once.
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Outcome out;
  Timer* timer = t.timer.get();
  constexpr int kRounds = 50;
  AwaitSleeps([timer] { return SleepFor(*timer, absl::ZeroDuration()); },
              kRounds, &out);
  for (int i = 0; i < 10 * kRounds && out.resumes.load() < kRounds; ++i) {
    t.clock->AdvanceAndSettle(kTick);
  }
  EXPECT_EQ(out.resumes.load(), kRounds);
  EXPECT_TRUE(out.Status().ok()) << out.Status();
}

TimerOptions WithExecutor(std::shared_ptr<QueueExecutor> executor) {
  TimerOptions options = Tick(kTick);
  options.task_executor = PostTo(executor);
  return options;
}

TEST(CoroSleepTest, TaskExecutorResumesTheCoroutine) {
  auto executor = std::make_shared<QueueExecutor>();
  ManualTimer t = MakeManualTimer(WithExecutor(executor));
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2)), &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  EXPECT_EQ(out.resumes.load(), 0);  // handed to the executor
  std::thread runner([&] {
    for (auto& f : executor->Take()) f();
  });
  const std::thread::id runner_id = runner.get_id();
  runner.join();
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
  EXPECT_EQ(out.Thread(), runner_id);
}

TEST(CoroSleepTest, CancelledSleepResumesThroughTheTaskExecutor) {
  auto executor = std::make_shared<QueueExecutor>();
  ManualTimer t = MakeManualTimer(WithExecutor(executor));
  std::stop_source stop;
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Seconds(2), stop.get_token()), &out);
  stop.request_stop();
  t.clock->AdvanceAndSettle(kTick);
  EXPECT_EQ(out.resumes.load(), 0);
  for (auto& f : executor->Take()) f();
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kCancelled);
}

TEST(CoroSleepTest, AnExecutorThatDropsTheTaskEndsTheSleep) {
  auto executor = std::make_shared<QueueExecutor>();
  ManualTimer t = MakeManualTimer(WithExecutor(executor));
  Outcome out;
  AwaitSleep(SleepFor(*t.timer, absl::Milliseconds(2)), &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  executor->Take();  // destroyed unrun
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_EQ(out.Status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CoroSleepTest, AwaitableMovedBeforeItIsAwaited) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Awaitable first = SleepFor(*t.timer, absl::Milliseconds(2));
  Awaitable moved(std::move(first));
  Outcome out;
  AwaitSleep(std::move(moved), &out);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  ASSERT_EQ(out.resumes.load(), 1);
  EXPECT_TRUE(out.Status().ok());
}

}  // namespace
}  // namespace tickwheel
