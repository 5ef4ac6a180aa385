// Timer lifecycle on a ManualClock: lazy start, stop() and what it returns,
// takeTask(), the destructor, stop() and destruction from inside a task, the
// task executor, throwing tasks and the worker thread's name.

#include <pthread.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(TimerLifecycleTest, WorkerStartsLazilyOnFirstNewTimeout) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  EXPECT_EQ(t.clock->SleeperCount(), 0);
  t.clock->AdvanceAndSettle(absl::Seconds(5));  // before start: not counted
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Milliseconds(10)).value();
  EXPECT_EQ(t.clock->SleeperCount(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  // startTime is the first newTimeout, 5 s in: the task ran 10 ms after it.
  EXPECT_EQ(probe->ran_at_nanos.load(), 5010000000);
}

TEST(TimerLifecycleTest, DestructorWithoutStopDestroysTasksWithoutRunningThem) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto probe = std::make_shared<Probe>();
  auto queued = std::make_shared<Probe>();
  Timeout held = t.timer->newTimeout(ProbeTask(probe), absl::Seconds(10)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  t.timer->newTimeout(ProbeTask(queued), absl::Seconds(10)).value();
  t.timer.reset();
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_EQ(queued->runs.load(), 0);
  // Destroyed although a handle is still held.
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_TRUE(queued->captures_destroyed.load());
  EXPECT_TRUE(held.isCancelled());
  EXPECT_FALSE(held.cancel());  // safe after the Timer is gone
  EXPECT_TRUE(held.takeTask() == nullptr);
  EXPECT_EQ(t.clock->SleeperCount(), 0);
}

TEST(TimerLifecycleTest, TimerDestroyedFromItsOwnTask) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto later = std::make_shared<Probe>();
  auto same_tick = std::make_shared<Probe>();
  Timeout later_handle =
      t.timer->newTimeout(ProbeTask(later), absl::Seconds(1)).value();
  t.timer->newTimeout([&](const Timeout&) { t.timer.reset(); },
                      absl::Milliseconds(5))
      .value();
  t.timer->newTimeout(ProbeTask(same_tick), absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  // AwaitIdle returned: the detached worker has finished and unregistered.
  EXPECT_EQ(t.clock->SleeperCount(), 0);
  EXPECT_EQ(t.timer, nullptr);
  EXPECT_EQ(later->runs.load(), 0);
  EXPECT_EQ(same_tick->runs.load(), 0);  // the walk stopped at the destroyer
  EXPECT_TRUE(later->captures_destroyed.load());
  EXPECT_TRUE(same_tick->captures_destroyed.load());
  EXPECT_TRUE(later_handle.isCancelled());
}

TEST(TimerLifecycleTest, TaskExecutorRunsTasksInsteadOfTheWorker) {
  std::vector<absl::AnyInvocable<void()>> handed;  // touched by worker only
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.task_executor = [&](absl::AnyInvocable<void()> run) {
    handed.push_back(std::move(run));
  };
  auto t = MakeManualTimer(std::move(options));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(10)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_TRUE(timeout.isExpired());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(probe->runs.load(), 0);
  handed[0]();  // the "executor thread" runs it
  EXPECT_EQ(probe->runs.load(), 1);
  EXPECT_TRUE(probe->captures_destroyed.load());
}

TEST(TimerLifecycleTest, ExecutorTaskRunAfterTimerDestructionSeesNoTimer) {
  std::vector<absl::AnyInvocable<void()>> handed;  // touched by worker only
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.task_executor = [&](absl::AnyInvocable<void()> run) {
    handed.push_back(std::move(run));
  };
  auto t = MakeManualTimer(std::move(options));
  Timer* seen = t.timer.get();
  t.timer
      ->newTimeout([&](const Timeout& self) { seen = self.timer(); },
                   absl::Milliseconds(10))
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  ASSERT_EQ(handed.size(), 1u);
  t.timer.reset();  // the executor has not run the task yet
  handed[0]();      // runs after ~Timer: timer() is safe and says so
  EXPECT_EQ(seen, nullptr);
}

TEST(TimerLifecycleTest, ThrowingTaskIsLoggedAndTheWorkerGoesOn) {
  CapturedLog log;
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto after = std::make_shared<Probe>();
  t.timer
      ->newTimeout([](const Timeout&) { throw std::runtime_error("boom"); },
                   absl::Milliseconds(5))
      .value();
  t.timer->newTimeout([](const Timeout&) { throw 42; }, absl::Milliseconds(5))
      .value();
  t.timer->newTimeout(ProbeTask(after), absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(after->runs.load(), 1);
  std::vector<std::string> messages = log.messages();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_NE(messages[0].find("boom"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("non-std::exception"), std::string::npos)
      << messages[1];
}

TEST(TimerLifecycleTest, ThrowingExecutorIsLogged) {
  CapturedLog log;
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.task_executor = [](absl::AnyInvocable<void()>) {
    throw std::runtime_error("executor full");
  };
  auto t = MakeManualTimer(std::move(options));
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(5)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(probe->captures_destroyed.load());
  ASSERT_EQ(log.messages().size(), 1u);
  EXPECT_NE(log.messages()[0].find("executor full"), std::string::npos);
}

TEST(TimerLifecycleTest, WorkerThreadIsNamedAndCutTo15Chars) {
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.thread_name = "tickwheel-requests-worker";
  auto t = MakeManualTimer(std::move(options));
  std::string name;
  t.timer
      ->newTimeout(
          [&](const Timeout&) {
            char buf[32] = {};
            pthread_getname_np(pthread_self(), buf, sizeof(buf));
            name = buf;
          },
          absl::Milliseconds(1))
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(name, "tickwheel-reque");
}

}  // namespace
}  // namespace tickwheel
