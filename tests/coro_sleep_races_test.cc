// tests/coro_sleep_races_test.cc
// -----------------------------------------------------------------------------
// Coroutine sleeps (timer/coro.h) raced from several threads at once: a stop
// request, the expiry (the ManualClock moving past the deadline), the
// timer's stop(), and the co_await itself; on a LocalTimer, a stop request
// from another thread racing the owner's advance(). Whatever the order, the
// coroutine resumes exactly once, never inside request_stop(), and, when it
// was suspended before stop() was called, before stop() returns. Run under
// TSan and ASan with interleaving points (tools/test.sh).

#include <atomic>
#include <latch>
#include <stop_token>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coro_test_util.h"
#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::AwaitSleep;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Outcome;
using ::tickwheel::testing::Tick;

constexpr absl::Duration kTick = absl::Milliseconds(1);
constexpr int kRounds = 200;

bool IsSleepEnd(const absl::Status& s) {
  return s.ok() || s.code() == absl::StatusCode::kCancelled ||
         s.code() == absl::StatusCode::kFailedPrecondition;
}

TEST(CoroSleepRacesTest, StopRequestExpiryAndStopResumeOnceBeforeStopReturns) {
  for (int round = 0; round < kRounds; ++round) {
    ManualTimer t = MakeManualTimer(Tick(kTick));
    std::stop_source stop;
    Outcome out;
    AwaitSleep(SleepFor(*t.timer, kTick, stop.get_token()), &out);
    std::latch go(3);
    int resumes_at_stop = -1;
    size_t returned = 1;
    std::thread expire([&] {
      go.arrive_and_wait();
      t.clock->Advance(kTick);
    });
    std::thread request([&] {
      go.arrive_and_wait();
      stop.request_stop();
    });
    std::thread stopper([&] {
      go.arrive_and_wait();
      absl::StatusOr<std::vector<Timeout>> left = t.timer->stop();
      resumes_at_stop = out.resumes.load(std::memory_order_acquire);
      returned = left.ok() ? left->size() : 1;
    });
    const std::thread::id requester = request.get_id();
    expire.join();
    request.join();
    stopper.join();
    ASSERT_EQ(out.resumes.load(), 1) << "round " << round;
    EXPECT_EQ(resumes_at_stop, 1) << "round " << round;
    EXPECT_EQ(returned, 0u) << "round " << round;
    EXPECT_TRUE(IsSleepEnd(out.Status())) << out.Status();
    EXPECT_NE(out.Thread(), requester) << "resumed inside request_stop()";
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  }
}

TEST(CoroSleepRacesTest, StopRequestRacingExpiryResumesOnce) {
  for (int round = 0; round < kRounds; ++round) {
    ManualTimer t = MakeManualTimer(Tick(kTick));
    std::stop_source stop;
    Outcome out;
    AwaitSleep(SleepFor(*t.timer, kTick, stop.get_token()), &out);
    std::latch go(2);
    std::thread expire([&] {
      go.arrive_and_wait();
      t.clock->Advance(kTick);
    });
    std::thread request([&] {
      go.arrive_and_wait();
      stop.request_stop();
    });
    const std::thread::id requester = request.get_id();
    expire.join();
    request.join();
    // Either way the worker resumes it within a tick or two.
    for (int i = 0; i < 4 && out.resumes.load() == 0; ++i) {
      t.clock->AdvanceAndSettle(kTick);
    }
    t.clock->AdvanceAndSettle(kTick);
    ASSERT_EQ(out.resumes.load(), 1) << "round " << round;
    const absl::Status s = out.Status();
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kCancelled) << s;
    EXPECT_NE(out.Thread(), requester) << "resumed inside request_stop()";
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  }
}

TEST(CoroSleepRacesTest, AwaitRacingExpiryStopRequestAndStopResumesOnce) {
  // The co_await itself joins the race, with a zero delay: the sleep may end
  // before co_await has finished suspending, or the timer may be stopped
  // before or after the sleep is scheduled.
  for (int round = 0; round < kRounds; ++round) {
    ManualTimer t = MakeManualTimer(Tick(kTick));
    ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(1)).ok());
    std::stop_source stop;
    Outcome out;
    std::latch go(4);
    std::thread sleeper([&] {
      go.arrive_and_wait();
      AwaitSleep(SleepFor(*t.timer, absl::ZeroDuration(), stop.get_token()),
                 &out);
    });
    std::thread expire([&] {
      go.arrive_and_wait();
      t.clock->Advance(kTick);
    });
    std::thread request([&] {
      go.arrive_and_wait();
      stop.request_stop();
    });
    std::thread stopper([&] {
      go.arrive_and_wait();
      EXPECT_TRUE(t.timer->stop().ok());
    });
    const std::thread::id requester = request.get_id();
    sleeper.join();
    expire.join();
    request.join();
    stopper.join();
    ASSERT_EQ(out.resumes.load(), 1) << "round " << round;
    EXPECT_TRUE(IsSleepEnd(out.Status())) << out.Status();
    EXPECT_NE(out.Thread(), requester) << "resumed inside request_stop()";
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  }
}

// On a LocalTimer: the owner thread moves the clock and calls advance()
// while another thread requests stop. The sleep resumes once, on the owner
// thread, inside advance(): OK when the expiry came first, Cancelled when
// the request did; never inside request_stop().
TEST(CoroSleepRacesTest, LocalTimerStopRequestRacingAdvanceResumesOnce) {
  for (int round = 0; round < kRounds; ++round) {
    testing::ManualLocalTimer t = testing::MakeLocalTimer(LocalOptions());
    std::stop_source stop;
    Outcome out;
    AwaitSleep(SleepFor(*t.timer, kTick, stop.get_token()), &out);
    std::latch go(2);
    std::thread request([&] {
      go.arrive_and_wait();
      stop.request_stop();
    });
    go.arrive_and_wait();
    int64_t ran = 0;
    for (int i = 0; i < 4 && out.resumes.load() == 0; ++i) {
      ran += t.AdvanceTo(t.NowNanos() + kTick / absl::Nanoseconds(1));
    }
    request.join();
    // A request after the expiry finds nothing to do; one before it moved
    // the deadline to now. Either way the sleep ended by the second tick.
    ASSERT_EQ(out.resumes.load(), 1) << "round " << round;
    EXPECT_EQ(ran, 1);
    EXPECT_TRUE(out.Status().ok() ||
                out.Status().code() == absl::StatusCode::kCancelled)
        << out.Status();
    EXPECT_EQ(out.Thread(), std::this_thread::get_id());
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
    EXPECT_EQ(t.timer->advance(), 0);
    EXPECT_EQ(out.resumes.load(), 1);
  }
}

}  // namespace
}  // namespace tickwheel
