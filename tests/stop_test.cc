// tests/stop_test.cc
// -----------------------------------------------------------------------------
// Timer::stop() on a ManualClock: it joins the worker and returns every
// timeout neither run nor cancelled, earliest deadline first, marked
// cancelled with its task inside, which takeTask() hands out exactly once;
// afterwards newTimeout() fails and a second stop() returns nothing. Only the
// worker thread itself (a task, or a task_executor that runs tasks inline) is
// refused, and it is told apart by what it runs, not by a thread id that a
// later thread may reuse.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::StatusMentions;
using ::tickwheel::testing::Tick;

TEST(StopTest, StopOnATimerThatNeverStartedReturnsNothing) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  absl::StatusOr<std::vector<Timeout>> stopped = t.timer->stop();
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->empty());
  EXPECT_EQ(t.clock->SleeperCount(), 0);
  EXPECT_EQ(t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(StopTest, StopReturnsUnprocessedTimeoutsEarliestFirst) {
  auto t = MakeManualTimer(Tick(absl::Milliseconds(10), 4));
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> scheduled;
  for (int seconds : {30, 10, 20, 0}) {
    probes.push_back(std::make_shared<Probe>());
    scheduled.push_back(
        t.timer->newTimeout(ProbeTask(probes.back()), absl::Seconds(seconds))
            .value());
  }
  Timeout cancelled =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(5)).value();
  ASSERT_TRUE(cancelled.cancel());
  // One still in the pending queue when stop() comes.
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));  // runs the 0 s one
  Timeout queued =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(40)).value();

  std::vector<Timeout> left = t.timer->stop().value();
  ASSERT_EQ(left.size(), 4u);
  EXPECT_TRUE(left[0] == scheduled[1]);  // 10 s
  EXPECT_TRUE(left[1] == scheduled[2]);  // 20 s
  EXPECT_TRUE(left[2] == scheduled[0]);  // 30 s
  EXPECT_TRUE(left[3] == queued);        // 40 s
  for (const Timeout& t2 : left) {
    EXPECT_TRUE(t2.isCancelled());
    EXPECT_FALSE(t2.isExpired());
    EXPECT_FALSE(t2.cancel());
  }
  EXPECT_EQ(probes[3]->runs.load(), 1);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.clock->SleeperCount(), 0);  // worker joined

  // takeTask() hands the task out once; it still works, and can be run.
  TimerTask task = left[0].takeTask();
  ASSERT_TRUE(task != nullptr);
  EXPECT_TRUE(left[0].takeTask() == nullptr);
  EXPECT_FALSE(probes[1]->captures_destroyed.load());
  task(left[0]);
  EXPECT_EQ(probes[1]->runs.load(), 1);
  task = nullptr;
  EXPECT_TRUE(probes[1]->captures_destroyed.load());

  // A second stop() returns nothing; newTimeout() is refused.
  EXPECT_TRUE(t.timer->stop().value().empty());
  absl::Status s =
      t.timer->newTimeout([](const Timeout&) {}, absl::Seconds(1)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// takeTask() has a task to give only for a timeout that stop() returned, and
// gives it once: not while pending, not after it ran or was cancelled, not a
// second time, and to exactly one of two racing callers.
TEST(StopTest, TakeTaskOnlyOnceAndOnlyAfterStop) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  auto ran = std::make_shared<Probe>(), cancelled = std::make_shared<Probe>();
  auto stopped = std::make_shared<Probe>(), raced = std::make_shared<Probe>();
  Timeout a =
      t.timer->newTimeout(ProbeTask(ran), absl::Milliseconds(10)).value();
  Timeout b =
      t.timer->newTimeout(ProbeTask(cancelled), absl::Seconds(5)).value();
  Timeout c = t.timer->newTimeout(ProbeTask(stopped), absl::Seconds(5)).value();
  Timeout d = t.timer->newTimeout(ProbeTask(raced), absl::Seconds(6)).value();
  EXPECT_TRUE(c.takeTask() == nullptr) << "pending: no task to take";
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  ASSERT_TRUE(b.cancel());
  EXPECT_TRUE(a.takeTask() == nullptr) << "ran: no task to take";
  EXPECT_TRUE(b.takeTask() == nullptr) << "cancelled: no task to take";
  ASSERT_EQ(t.timer->stop().value().size(), 2u);
  TimerTask task = c.takeTask();
  ASSERT_TRUE(task != nullptr);
  EXPECT_TRUE(c.takeTask() == nullptr) << "second takeTask()";
  task(c);  // the caller may run it elsewhere
  EXPECT_EQ(stopped->runs.load(), 1);
  task = nullptr;
  EXPECT_TRUE(stopped->captures_destroyed.load());
  // Two threads race for d's task: exactly one gets it.
  std::atomic<int> got{0};
  std::thread x([&] { got += d.takeTask() != nullptr; });
  std::thread y([&] { got += d.takeTask() != nullptr; });
  x.join();
  y.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_TRUE(raced->captures_destroyed.load());
  EXPECT_EQ(raced->runs.load(), 0);
}

// stop() joins the worker, which cannot wait for itself: called on the worker
// thread, from a task or from a task_executor that runs tasks inline, it
// fails with FailedPrecondition naming the worker thread, and the timer goes
// on as if it had not been called.
TEST(StopTest, StopFromTheWorkerThreadFailsAndTheTimerGoesOn) {
  for (bool with_executor : {false, true}) {
    SCOPED_TRACE(with_executor ? "inline task_executor" : "no task_executor");
    std::atomic<Timer*> self{nullptr};
    std::vector<absl::Status> seen;  // written on the worker thread only
    TimerOptions options = Tick(absl::Milliseconds(10));
    if (with_executor) {
      options.task_executor = [&](absl::AnyInvocable<void()> run) {
        seen.push_back(self.load()->stop().status());  // the executor itself
        run();
      };
    }
    ManualTimer t = MakeManualTimer(options);
    self.store(t.timer.get());
    auto later = std::make_shared<Probe>();
    ASSERT_TRUE(t.timer
                    ->newTimeout(
                        [&](const Timeout& me) {
                          seen.push_back(
                              me.timer()->stop().status());  // a task
                        },
                        absl::Milliseconds(10))
                    .ok());
    ASSERT_TRUE(
        t.timer->newTimeout(ProbeTask(later), absl::Milliseconds(20)).ok());
    t.clock->AdvanceAndSettle(absl::Milliseconds(10));
    ASSERT_EQ(seen.size(), with_executor ? 2u : 1u);
    for (const absl::Status& s : seen) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_TRUE(StatusMentions(s, "worker thread")) << s;
    }
    // The timer is unharmed: what was scheduled before runs, and so does what
    // is scheduled now.
    auto after = std::make_shared<Probe>();
    ASSERT_TRUE(
        t.timer->newTimeout(ProbeTask(after), absl::Milliseconds(10)).ok());
    t.clock->AdvanceAndSettle(absl::Milliseconds(10));
    EXPECT_EQ(later->runs.load(), 1);
    EXPECT_EQ(after->runs.load(), 1);
    EXPECT_TRUE(t.timer->stop().ok());
  }
}

// Thread ids are reused once a thread has exited: the worker's identity must
// not be. After stop() has joined the worker, a thread that gets the worker's
// old id is an ordinary thread, and its stop() succeeds (an empty result:
// the timer is already stopped).
TEST(StopTest, StopFromAThreadThatReusesTheWorkersIdSucceeds) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::thread::id worker_id;  // written by the worker, read once it sleeps
  t.timer
      ->newTimeout(
          [&](const Timeout&) { worker_id = std::this_thread::get_id(); },
          absl::ZeroDuration())
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  ASSERT_NE(worker_id, std::thread::id()) << "the task did not run";
  ASSERT_TRUE(t.timer->stop().ok());  // joins the worker
  int reused = 0;
  for (int attempt = 0; attempt < 50 && reused < 3; ++attempt) {
    std::thread([&] {
      if (std::this_thread::get_id() == worker_id) ++reused;
      absl::StatusOr<std::vector<Timeout>> r = t.timer->stop();
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) {
        EXPECT_TRUE(r->empty());
      }
    }).join();
  }
  // glibc hands a new thread the stack and id of the one just joined; the
  // test means nothing where ids are never reused.
  EXPECT_GT(reused, 0) << "no thread reused the worker's id";
}

}  // namespace
}  // namespace tickwheel
