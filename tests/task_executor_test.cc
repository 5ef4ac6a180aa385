// tests/task_executor_test.cc
// -----------------------------------------------------------------------------
// TimerOptions::task_executor, on a ManualClock: the worker hands each
// expired task to it instead of running it, the timeout reads expired and no
// longer pending from then on, and the task's captures die with its run, or
// with the closure when the executor drops it unrun, while handles live. A
// task the executor runs after ~Timer sees timer() == nullptr. An executor
// that throws is logged and loses only the task it was handed.

#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(TaskExecutorTest, TaskExecutorRunsTasksInsteadOfTheWorker) {
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

// The closure keeps the timer's shared state alive, so timer() is safe to
// call in a task that runs after the Timer is gone, and says so.
TEST(TaskExecutorTest, ExecutorTaskRunAfterTimerDestructionSeesNoTimer) {
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

// The worker cannot tell whether a throwing executor kept the closure: that
// task does not run, the throw is logged once, and the next task is handed
// over as usual. Its captures go with the closure.
TEST(TaskExecutorTest, ThrowingExecutorIsLoggedAndDropsOnlyThatTask) {
  CapturedLog log;
  int calls = 0;  // worker thread only
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.task_executor = [&](absl::AnyInvocable<void()> run) {
    if (calls++ == 0) throw std::runtime_error("executor full");
    run();
  };
  ManualTimer t = MakeManualTimer(options);
  auto dropped = std::make_shared<Probe>(), next = std::make_shared<Probe>();
  ASSERT_TRUE(
      t.timer->newTimeout(ProbeTask(dropped), absl::Milliseconds(10)).ok());
  ASSERT_TRUE(
      t.timer->newTimeout(ProbeTask(next), absl::Milliseconds(10)).ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(dropped->runs.load(), 0);
  EXPECT_EQ(next->runs.load(), 1);
  ASSERT_EQ(log.messages().size(), 1u);
  EXPECT_NE(log.messages()[0].find("executor full"), std::string::npos);
  EXPECT_TRUE(dropped->captures_destroyed.load());
}

TEST(TaskExecutorTest, DroppedClosureDestroysTheTaskWhileAHandleLives) {
  std::vector<absl::AnyInvocable<void()>> handed;  // touched by worker only
  TimerOptions options = Tick(absl::Milliseconds(10));
  options.task_executor = [&](absl::AnyInvocable<void()> run) {
    handed.push_back(std::move(run));
  };
  ManualTimer t = MakeManualTimer(std::move(options));
  auto probe = std::make_shared<Probe>();
  Timeout timeout =
      t.timer->newTimeout(ProbeTask(probe), absl::Milliseconds(10)).value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_FALSE(probe->captures_destroyed.load());
  handed.clear();  // dropped unrun
  EXPECT_EQ(probe->runs.load(), 0);
  EXPECT_TRUE(probe->captures_destroyed.load());
  EXPECT_TRUE(timeout.isExpired());
}

}  // namespace
}  // namespace tickwheel
