// IdleTracker on a Timer the application already has (IdleTrackerOptions::
// timer), on a ManualClock: it fires on that timer's worker next to the
// application's own timeouts, uses that timer's tick and clock, starts no
// thread, takes every timeout of its own off the timer when deactivated or
// destroyed, and leaves the timer running. Exact, tick by tick.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
constexpr absl::Duration kTick = absl::Milliseconds(10);

class IdleSharedTimerTest : public ::testing::Test {
 protected:
  IdleSharedTimerTest() {
    TimerOptions o;
    o.tick_duration = kTick;
    o.ticks_per_wheel = 64;
    o.clock = clock_;
    timer_ = Timer::Create(o).value();
  }

  std::unique_ptr<IdleTracker> Make() {
    IdleTrackerOptions o;
    o.timer = timer_;
    o.default_idle_timeout = absl::Milliseconds(100);
    return IdleTracker::Create(std::move(o)).value();
  }

  // Each on_idle call's clock time, in ms.
  absl::AnyInvocable<void()> Record() {
    return [this] {
      std::lock_guard<std::mutex> l(mu_);
      fired_at_.push_back(clock_->NowNanos() / kMs);
    };
  }
  std::vector<int64_t> fired() {
    std::lock_guard<std::mutex> l(mu_);
    return fired_at_;
  }
  void Step(absl::Duration d) { clock_->AdvanceInSteps(d, kTick); }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::shared_ptr<Timer> timer_;
  std::mutex mu_;
  std::vector<int64_t> fired_at_;
};

TEST_F(IdleSharedTimerTest, FiresOnTheApplicationsTimerBesideItsOwnTasks) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  std::atomic<int> app_runs{0};
  ASSERT_TRUE(
      timer_->newTimeout([&] { ++app_runs; }, absl::Milliseconds(50)).ok());
  IdleHandle idle = tracker->Register(Record()).value();
  Step(absl::Milliseconds(40));
  idle.touch();  // at 40 ms, stamped within one refresh period (a tick)
  Step(absl::Milliseconds(100));
  EXPECT_EQ(app_runs.load(), 1);
  EXPECT_TRUE(fired().empty()) << "touched at 40 ms: idle from about 50 ms on";
  Step(absl::Milliseconds(20));
  EXPECT_EQ(fired(), (std::vector<int64_t>{150}));
  EXPECT_EQ(clock_->SleeperCount(), 1) << "one worker: the application's";
  EXPECT_EQ(tracker->timerMetrics().expired, timer_->metrics().expired);
}

TEST_F(IdleSharedTimerTest, UsesTheTimersTickAndRejectsASecondClock) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle idle = tracker->Register(Record(), absl::Milliseconds(25)).value();
  Step(absl::Milliseconds(20));
  EXPECT_TRUE(fired().empty());
  Step(absl::Milliseconds(10));
  EXPECT_EQ(fired(), (std::vector<int64_t>{30}))
      << "25 ms idle lands on the timer's next 10 ms tick boundary";

  IdleTrackerOptions both;
  both.timer = timer_;
  both.clock = clock_;
  EXPECT_EQ(IdleTracker::Create(both).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(IdleSharedTimerTest,
       DeactivateTakesItsTimeoutsOffAndLeavesTheTimerRunning) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  ASSERT_TRUE(timer_->newTimeout([] {}, absl::Seconds(10)).ok());
  std::vector<IdleHandle> handles;
  for (int i = 0; i < 5; ++i)
    handles.push_back(tracker->Register(Record()).value());
  EXPECT_EQ(timer_->pendingTimeouts(), 1 + 5 + 1) << "app, checks, refresh";
  Step(absl::Milliseconds(50));
  ASSERT_TRUE(tracker->Deactivate().ok());
  EXPECT_EQ(timer_->pendingTimeouts(), 1) << "only the application's own";
  EXPECT_EQ(tracker->metrics().tracked, 5) << "registered, dormant";
  Step(absl::Seconds(1));
  EXPECT_TRUE(fired().empty()) << "never fires while inactive";
  std::atomic<int> app_runs{0};
  ASSERT_TRUE(
      timer_->newTimeout([&] { ++app_runs; }, absl::Milliseconds(10)).ok());
  Step(absl::Milliseconds(10));
  EXPECT_EQ(app_runs.load(), 1) << "the timer keeps running";

  ASSERT_TRUE(tracker->Activate().ok());  // at 1060 ms: idle time starts now
  EXPECT_EQ(timer_->pendingTimeouts(), 1 + 5 + 1);
  Step(absl::Milliseconds(100));
  EXPECT_EQ(fired(), (std::vector<int64_t>(5, 1160)));
}

TEST_F(IdleSharedTimerTest, DestroyingTheTrackerLeavesTheTimerRunning) {
  std::vector<IdleHandle> handles;
  {
    auto tracker = Make();
    ASSERT_TRUE(tracker->Activate().ok());
    for (int i = 0; i < 3; ++i)
      handles.push_back(tracker->Register(Record()).value());
  }
  EXPECT_EQ(timer_->pendingTimeouts(), 0);
  EXPECT_FALSE(handles[0].unregister()) << "inert once the tracker is gone";
  std::atomic<int> app_runs{0};
  ASSERT_TRUE(
      timer_->newTimeout([&] { ++app_runs; }, absl::Milliseconds(10)).ok());
  Step(absl::Milliseconds(200));
  EXPECT_EQ(app_runs.load(), 1);
  EXPECT_TRUE(fired().empty());
}

TEST_F(IdleSharedTimerTest, CancelAllPassesTheTrackerBy) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  std::atomic<int> app_runs{0};
  ASSERT_TRUE(
      timer_->newTimeout([&] { ++app_runs; }, absl::Milliseconds(50)).ok());
  IdleHandle idle = tracker->Register(Record()).value();
  Step(absl::Milliseconds(20));
  EXPECT_EQ(timer_->cancelAll(), 1) << "the application's own timeout only";
  EXPECT_EQ(timer_->pendingTimeouts(), 2) << "the check and the refresh";
  Step(absl::Milliseconds(80));
  EXPECT_EQ(app_runs.load(), 0);
  EXPECT_EQ(fired(), (std::vector<int64_t>{100})) << "still tracking, on time";
}

TEST_F(IdleSharedTimerTest, StopReturnsOnlyTheApplicationsTimeouts) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  Timeout app = timer_->newTimeout([] {}, absl::Seconds(10)).value();
  auto token = std::make_shared<int>(0);
  IdleHandle idle = tracker->Register([token, this] { Record()(); }).value();
  absl::StatusOr<std::vector<Timeout>> left = timer_->stop();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u)
      << "the tracker's check and refresh are not in it";
  EXPECT_EQ((*left)[0], app);
  EXPECT_EQ(token.use_count(), 2) << "on_idle stays with its registration";
  // Nothing can fire any more; the registration stays registered and
  // unregister() ends it as usual.
  EXPECT_TRUE(idle.isRegistered());
  ASSERT_TRUE(tracker->Deactivate().ok());
  EXPECT_EQ(tracker->Activate().code(), absl::StatusCode::kFailedPrecondition)
      << "nothing to run on";
  EXPECT_FALSE(tracker->isActive());
  EXPECT_TRUE(idle.unregister());
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_TRUE(fired().empty());
}

// The coarse clock's refresh runs only while something is tracked: with no
// connections the tracker schedules nothing, so the application's worker
// does not wake for it.
TEST_F(IdleSharedTimerTest, PostsNothingWhileNothingIsTracked) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  Step(absl::Seconds(1));
  EXPECT_EQ(tracker->metrics().refreshes, 0);
  EXPECT_EQ(timer_->metrics().expired, 0);
  EXPECT_EQ(timer_->pendingTimeouts(), 0);

  // The first registration restarts the refresh: one run per tick.
  IdleHandle idle = tracker->Register(Record()).value();  // at 1000 ms
  EXPECT_EQ(timer_->pendingTimeouts(), 2) << "the check and the refresh";
  Step(absl::Milliseconds(50));
  EXPECT_EQ(tracker->metrics().refreshes, 5);
  EXPECT_EQ(timer_->metrics().expired, 5);

  // Unregistered: the refresh already scheduled runs once more, finds
  // nothing tracked, publishes nothing and schedules no other.
  EXPECT_TRUE(idle.unregister());  // at 1050 ms
  Step(absl::Seconds(1));
  EXPECT_EQ(tracker->metrics().refreshes, 5);
  EXPECT_EQ(timer_->metrics().expired, 6);
  EXPECT_EQ(timer_->pendingTimeouts(), 0);

  // The same after the last registration fires. (The check and the refresh
  // that share its tick run in either order, hence the bound on expired.)
  ASSERT_TRUE(idle.reregister(Record()).ok());  // at 2050 ms
  Step(absl::Milliseconds(100));
  EXPECT_EQ(fired(), (std::vector<int64_t>{2150}));
  const int64_t refreshes = tracker->metrics().refreshes;
  const int64_t expired = timer_->metrics().expired;
  Step(absl::Seconds(1));
  EXPECT_EQ(tracker->metrics().refreshes, refreshes);
  EXPECT_LE(timer_->metrics().expired, expired + 1);
  EXPECT_EQ(timer_->pendingTimeouts(), 0);
}

}  // namespace
}  // namespace tickwheel
