// The LocalTimer's owner thread, checked in every build: a scheduling call
// from another thread is PermissionDenied and schedules nothing, the other
// owner-only calls abort with a message, and LocalTimerOptions::owner names
// the owner before any call binds it.

#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {
namespace {

TEST(LocalTimerOwnerThreadTest, TheFirstOwnerOnlyCallBindsTheOwner) {
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create().value();
  EXPECT_EQ(timer->ownerThread(), std::thread::id());
  EXPECT_FALSE(timer->isOwnerThread());
  std::thread::id helper_id;
  std::thread([&] {
    helper_id = std::this_thread::get_id();
    EXPECT_EQ(timer->advance(), 0);
    EXPECT_TRUE(timer->isOwnerThread());
  }).join();
  EXPECT_EQ(timer->ownerThread(), helper_id);
  EXPECT_FALSE(timer->isOwnerThread());
}

TEST(LocalTimerOwnerThreadTest, SchedulingOffTheOwnerIsPermissionDenied) {
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create().value();
  ASSERT_TRUE(timer->newTimeout([] {}, absl::Hours(1)).ok());  // binds this
  int ran = 0;
  std::thread([&] {
    absl::StatusOr<Timeout> t =
        timer->newTimeout([&ran] { ++ran; }, absl::ZeroDuration());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kPermissionDenied)
        << t.status();
    EXPECT_EQ(timer
                  ->newPeriodic([&ran] { ++ran; }, absl::Milliseconds(1),
                                absl::Milliseconds(1))
                  .status()
                  .code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(
        timer->newTimeoutAt([&ran] { ++ran; }, timer->now()).status().code(),
        absl::StatusCode::kPermissionDenied);
    EXPECT_FALSE(timer->isOwnerThread());
  }).join();
  // Nothing was filed: only the owner's own timeout is pending.
  EXPECT_EQ(timer->pendingTimeouts(), 1);
  timer->advance();
  EXPECT_EQ(ran, 0);
  EXPECT_TRUE(timer->isOwnerThread());
}

TEST(LocalTimerOwnerThreadTest, ANamedOwnerRefusesEveryOtherThread) {
  // The loop's thread is named before it makes a call: the creating
  // thread's first call is refused instead of binding the timer to itself.
  std::thread loop([] {});
  const std::thread::id loop_id = loop.get_id();
  loop.join();
  LocalTimerOptions options;
  options.owner = loop_id;
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create(options).value();
  EXPECT_EQ(timer->ownerThread(), loop_id);
  EXPECT_FALSE(timer->isOwnerThread());
  EXPECT_EQ(timer->newTimeout([] {}, absl::Seconds(1)).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(timer->pendingTimeouts(), 0);
  EXPECT_EQ(timer->ownerThread(), loop_id);
}

TEST(LocalTimerOwnerThreadTest, ANamedOwnerSchedulesAndRuns) {
  std::unique_ptr<LocalTimer> timer;
  int ran = 0;
  std::thread loop([&] {
    // Made here for this very thread, named explicitly.
    LocalTimerOptions options;
    options.owner = std::this_thread::get_id();
    timer = LocalTimer::Create(options).value();
    EXPECT_TRUE(timer->isOwnerThread());
    ASSERT_TRUE(
        timer->newTimeout([&ran] { ++ran; }, absl::ZeroDuration()).ok());
    while (ran == 0) timer->advance();
    timer->stop();
  });
  loop.join();
  EXPECT_EQ(ran, 1);
}

TEST(LocalTimerOwnerThreadDeathTest, AdvanceOffTheOwnerAbortsInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::unique_ptr<LocalTimer> timer = LocalTimer::Create().value();
        timer->advance();  // binds this thread
        std::thread([&] { timer->advance(); }).join();
      },
      "LocalTimer::advance\\(\\) called on thread .*owner-only");
}

TEST(LocalTimerOwnerThreadDeathTest, StopOffTheNamedOwnerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::thread other([] {});
        LocalTimerOptions options;
        options.owner = other.get_id();
        other.join();
        std::unique_ptr<LocalTimer> timer = LocalTimer::Create(options).value();
        timer->stop();
      },
      "LocalTimer::stop\\(\\) called on thread");
}

}  // namespace
}  // namespace tickwheel
