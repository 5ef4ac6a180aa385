// tests/worker_thread_test.cc
// -----------------------------------------------------------------------------
// The worker thread, on a ManualClock: none runs until the first newTimeout(),
// which starts it and sets startTime, the origin of every deadline; it
// carries TimerOptions::thread_name (cut to the 15 characters pthread names
// hold); and a task that throws is logged, its captures are destroyed, and
// the worker goes on to the next task.

#include <pthread.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;
using ::tickwheel::testing::CaptureGuard;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

TEST(WorkerThreadTest, WorkerStartsLazilyOnFirstNewTimeout) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  EXPECT_EQ(t.clock->SleeperCount(), 0);
  t.clock->AdvanceAndSettle(absl::Seconds(5));  // before start: not counted
  auto probe = std::make_shared<Probe>();
  t.timer->newTimeout(ProbeTask(probe, t.clock), absl::Milliseconds(10))
      .value();
  EXPECT_EQ(t.clock->SleeperCount(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  // startTime is the first newTimeout, 5 s in: the task ran 10 ms after it.
  EXPECT_EQ(probe->ran_at_nanos.load(), 5010000000);
}

TEST(WorkerThreadTest, WorkerThreadIsNamedAndCutTo15Chars) {
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

TEST(WorkerThreadTest, ThrowingTasksAreLoggedAndTheWorkerGoesOn) {
  CapturedLog log;
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto after = std::make_shared<Probe>();
  auto thrower = std::make_shared<Probe>();
  ASSERT_TRUE(t.timer
                  ->newTimeout(
                      [guard = CaptureGuard(thrower)](const Timeout&) {
                        throw std::runtime_error("boom");
                      },
                      absl::Milliseconds(10))
                  .ok());
  ASSERT_TRUE(
      t.timer
          ->newTimeout([](const Timeout&) { throw 42; }, absl::Milliseconds(10))
          .ok());
  ASSERT_TRUE(
      t.timer->newTimeout(ProbeTask(after), absl::Milliseconds(10)).ok());
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(after->runs.load(), 1);
  EXPECT_TRUE(thrower->captures_destroyed.load());
  const std::vector<std::string> messages = log.messages();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_NE(messages[0].find("boom"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("non-std::exception"), std::string::npos)
      << messages[1];
  EXPECT_EQ(t.timer->metrics().expired, 3);
}

}  // namespace
}  // namespace tickwheel
