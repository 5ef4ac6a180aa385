// Schedules three timeouts on a Timer driven by a ManualClock, cancels one,
// moves one with reset(), and checks which tasks ran and when. Exact: the
// clock moves one tick at a time, and ManualClock::AdvanceInSteps() waits
// after each step until the worker has done all the work that the new time
// made due. Exits non-zero on any unexpected result.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace {

constexpr int64_t kMs = 1000000;  // ManualClock readings are nanoseconds

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  auto clock = std::make_shared<tickwheel::ManualClock>();
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  options.ticks_per_wheel = 64;
  options.clock = clock;
  absl::StatusOr<std::unique_ptr<tickwheel::Timer>> created =
      tickwheel::Timer::Create(options);
  if (!created.ok()) {
    std::printf("FAIL: Timer::Create: %s\n",
                created.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<tickwheel::Timer> timer = *std::move(created);

  // Each task records the clock reading at which it ran (-1: never).
  std::atomic<int64_t> request_ran_at{-1};
  std::atomic<int64_t> retry_ran_at{-1};
  std::atomic<int64_t> lease_ran_at{-1};
  auto at = [&clock](std::atomic<int64_t>& slot) {
    return [&clock, &slot] { slot = clock->NowNanos(); };
  };
  tickwheel::Timeout request =
      timer->newTimeout(at(request_ran_at), absl::Milliseconds(50)).value();
  tickwheel::Timeout retry =
      timer->newTimeout(at(retry_ran_at), absl::Milliseconds(80)).value();
  tickwheel::Timeout lease =
      timer->newTimeout(at(lease_ran_at), absl::Milliseconds(100)).value();
  Check(timer->pendingTimeouts() == 3, "three timeouts pending");

  Check(request.cancel(), "cancel() of a pending timeout returns true");
  Check(request.isCancelled(), "the cancelled timeout reports isCancelled()");
  Check(!request.cancel(), "a second cancel() returns false");
  Check(lease.reset(absl::Milliseconds(150)),
        "reset() of a pending timeout returns true");
  Check(timer->pendingTimeouts() == 2, "two timeouts pending after the cancel");

  const absl::Duration tick = timer->tickDuration();
  clock->AdvanceInSteps(absl::Milliseconds(70), tick);
  Check(retry_ran_at == -1, "nothing runs before its deadline");
  clock->AdvanceInSteps(absl::Milliseconds(30), tick);  // now 100 ms
  Check(retry_ran_at >= 80 * kMs && retry_ran_at <= 90 * kMs,
        "the 80 ms timeout ran at its deadline, within a tick");
  Check(retry.isExpired(), "it reports isExpired()");
  Check(lease_ran_at == -1,
        "the reset timeout did not run at its old deadline");

  clock->AdvanceInSteps(absl::Milliseconds(60), tick);  // now 160 ms
  Check(lease_ran_at >= 150 * kMs && lease_ran_at <= 160 * kMs,
        "the reset timeout ran at its new deadline, within a tick");
  Check(request_ran_at == -1, "the cancelled timeout never ran");
  Check(timer->pendingTimeouts() == 0, "nothing pending at the end");

  absl::StatusOr<std::vector<tickwheel::Timeout>> left = timer->stop();
  Check(left.ok() && left->empty(), "stop() returns no leftover timeouts");

  std::printf("subdirectory consumer: tickwheel %s, %s\n", TICKWHEEL_VERSION,
              failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
