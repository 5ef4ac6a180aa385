// tests/kernel_timer_slack_test.cc
// -----------------------------------------------------------------------------
// A Timer on the real clock whose slack is below the kernel's default timer
// slack (50 us) sets its worker thread's kernel timer slack to its own
// (1 ns for slack 0), so that the kernel does not end the worker's sleeps
// later than the timer allows; with a larger slack it leaves the thread's
// slack as it was. Read by the task itself, on the worker thread. Nothing
// here measures time.

#include <sys/prctl.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <optional>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

// The kernel timer slack of the thread that runs the Timer's tasks.
int64_t WorkerTimerSlack(std::optional<absl::Duration> slack) {
  TimerOptions options;
  options.slack = slack;
  auto timer = Timer::Create(std::move(options)).value();
  std::promise<int64_t> seen;
  timer
      ->newTimeout(
          [&seen] {
            seen.set_value(static_cast<int64_t>(prctl(PR_GET_TIMERSLACK)));
          },
          absl::Milliseconds(1))
      .value();
  const int64_t value = seen.get_future().get();
  timer->stop();
  return value;
}

TEST(KernelTimerSlack, SlackZeroAsksTheKernelForNone) {
  EXPECT_EQ(WorkerTimerSlack(absl::ZeroDuration()), 1);
}

TEST(KernelTimerSlack, ASlackBelowTheKernelsIsPassedOn) {
  EXPECT_EQ(WorkerTimerSlack(absl::Microseconds(20)), 20'000);
}

TEST(KernelTimerSlack, TheDefaultSlackLeavesTheThreadsAsItWas) {
  // A new thread inherits its creator's slack: the worker is started by
  // this thread's first newTimeout().
  const int64_t mine = prctl(PR_GET_TIMERSLACK);
  EXPECT_EQ(WorkerTimerSlack(std::nullopt), mine);
  EXPECT_EQ(WorkerTimerSlack(absl::Microseconds(50)), mine);
}

}  // namespace
}  // namespace tickwheel
