// What an IdleHandle keeps alive once its tracker has been destroyed: nothing
// the application gave the tracker. The application's Timer (with its worker
// thread), the clock and the task executor with its captures all go when the
// application lets go of them, while handles of every kind (armed, dormant,
// fired with on_idle queued on the executor) live on and stay inert.

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::QueueExecutor;

constexpr absl::Duration kTick = absl::Milliseconds(10);

// Registers one handle that fires (its on_idle queued on the executor) and
// one that stays armed, then advances past the first one's idle timeout.
std::vector<IdleHandle> RegisterAndFireOne(IdleTracker& tracker,
                                           ManualClock& clock, int* runs) {
  std::vector<IdleHandle> handles;
  handles.push_back(
      tracker.Register([runs] { ++*runs; }, absl::Milliseconds(20)).value());
  handles.push_back(
      tracker.Register([runs] { ++*runs; }, absl::Seconds(10)).value());
  clock.AdvanceInSteps(absl::Milliseconds(20), kTick);
  EXPECT_TRUE(handles[0].hasFired());
  EXPECT_TRUE(handles[1].isRegistered());
  return handles;
}

void ExpectInert(std::vector<IdleHandle>& handles) {
  for (IdleHandle& h : handles) {
    h.touch();
    EXPECT_FALSE(h.isRegistered());
    EXPECT_FALSE(h.unregister());
    EXPECT_EQ(h.reregister([] {}).code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

TEST(IdleLifetimeTest, InertHandlesKeepNoSharedTimerOrExecutorAlive) {
  auto clock = std::make_shared<ManualClock>();
  TimerOptions timer_options;
  timer_options.tick_duration = kTick;
  timer_options.clock = clock;
  std::shared_ptr<Timer> timer = Timer::Create(timer_options).value();
  const std::weak_ptr<Timer> weak_timer = timer;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> weak_token = token;
  auto executor = std::make_shared<QueueExecutor>();

  IdleTrackerOptions options;
  options.timer = timer;
  options.task_executor = PostTo(executor, std::move(token));
  auto tracker = IdleTracker::Create(std::move(options)).value();
  ASSERT_TRUE(tracker->Activate().ok());
  int runs = 0;
  std::vector<IdleHandle> handles = RegisterAndFireOne(*tracker, *clock, &runs);
  std::vector<absl::AnyInvocable<void()>> queued = executor->Take();
  ASSERT_EQ(queued.size(), 1u);

  tracker.reset();
  EXPECT_TRUE(weak_token.expired())
      << "the executor and its captures went with the tracker";
  EXPECT_FALSE(weak_timer.expired()) << "the application still holds it";
  // The application lets go of its Timer: it is destroyed (its worker
  // joined) although handles and a queued on_idle call live on.
  timer.reset();
  EXPECT_TRUE(weak_timer.expired());
  for (auto& f : queued) f();
  EXPECT_EQ(runs, 0) << "on_idle was destroyed with the tracker";
  ExpectInert(handles);
}

TEST(IdleLifetimeTest, InertHandlesKeepNoClockOrExecutorAlive) {
  auto clock = std::make_shared<ManualClock>();
  const std::weak_ptr<ManualClock> weak_clock = clock;
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> weak_token = token;
  auto executor = std::make_shared<QueueExecutor>();

  IdleTrackerOptions options;
  options.clock = clock;
  options.tick_duration = kTick;
  options.task_executor = PostTo(executor, std::move(token));
  auto tracker = IdleTracker::Create(std::move(options)).value();
  ASSERT_TRUE(tracker->Activate().ok());
  int runs = 0;
  std::vector<IdleHandle> handles = RegisterAndFireOne(*tracker, *clock, &runs);
  std::vector<absl::AnyInvocable<void()>> queued = executor->Take();
  ASSERT_EQ(queued.size(), 1u);
  // A dormant registration too.
  ASSERT_TRUE(tracker->Deactivate().ok());
  handles.push_back(tracker->Register([&runs] { ++runs; }).value());

  tracker.reset();
  clock.reset();
  EXPECT_TRUE(weak_clock.expired()) << "the clock went with the tracker";
  EXPECT_TRUE(weak_token.expired())
      << "the executor and its captures went with the tracker";
  for (auto& f : queued) f();
  EXPECT_EQ(runs, 0);
  ExpectInert(handles);
}

}  // namespace
}  // namespace tickwheel
