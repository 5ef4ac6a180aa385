// Uses an installed tickwheel through find_package(tickwheel):
//   - an IdleTracker on a ManualClock: of two tracked connections, the one
//     that stays silent is reported idle at its idle timeout, the one that
//     keeps touching is not, and unregister() ends tracking;
//   - a Timer on the real clock: two short timeouts run, a cancelled one
//     does not (waits are bounded generously; no duration is asserted).
// Exits non-zero on any unexpected result.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "absl/time/clock.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"
#include "timer/timer.h"  // the application's own

namespace {

constexpr int64_t kMs = 1000000;  // ManualClock readings are nanoseconds

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

void IdleConnections() {
  auto clock = std::make_shared<tickwheel::ManualClock>();
  tickwheel::IdleTrackerOptions options;
  options.default_idle_timeout = absl::Milliseconds(app::kIdleTimeoutMs);
  options.tick_duration = absl::Milliseconds(10);
  options.ticks_per_wheel = 64;
  options.clock = clock;
  std::unique_ptr<tickwheel::IdleTracker> tracker =
      tickwheel::IdleTracker::Create(options).value();
  Check(tracker->Activate().ok(), "Activate()");

  std::atomic<int64_t> silent_idle_at{-1};
  std::atomic<int64_t> busy_idle_at{-1};
  tickwheel::IdleHandle silent =
      tracker->Register([&] { silent_idle_at = clock->NowNanos(); }).value();
  tickwheel::IdleHandle busy =
      tracker->Register([&] { busy_idle_at = clock->NowNanos(); }).value();

  // 150 ms, one tick at a time; the busy connection has traffic every tick.
  for (int t = 0; t < 15; ++t) {
    busy.touch();
    clock->AdvanceInSteps(absl::Milliseconds(10), absl::Milliseconds(10));
  }
  Check(silent.hasFired(), "the silent connection was reported idle");
  Check(silent_idle_at >= app::kIdleTimeoutMs * kMs &&
            silent_idle_at <= (app::kIdleTimeoutMs + 20) * kMs,
        "at its idle timeout, within a refresh period and a tick");
  Check(!busy.hasFired() && busy_idle_at == -1,
        "the connection with traffic was not");
  Check(busy.unregister(), "unregister() ends the busy connection's tracking");
  clock->AdvanceInSteps(absl::Milliseconds(200), absl::Milliseconds(10));
  Check(busy_idle_at == -1, "and it is never reported afterwards");
  Check(tracker->metrics().tracked == 0, "nothing tracked at the end");
}

void RealClockTimeouts() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(5);
  std::unique_ptr<tickwheel::Timer> timer =
      tickwheel::Timer::Create(options).value();
  std::atomic<int> ran{0};
  std::atomic<bool> cancelled_ran{false};
  timer->newTimeout([&] { ran.fetch_add(1); }, absl::Milliseconds(10)).value();
  timer->newTimeout([&] { ran.fetch_add(1); }, absl::Milliseconds(20)).value();
  tickwheel::Timeout doomed =
      timer->newTimeout([&] { cancelled_ran = true; }, absl::Milliseconds(30))
          .value();
  Check(doomed.cancel(), "cancel() before the deadline returns true");

  // Generous: a loaded machine may be slow, but not this slow.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (ran.load() < 2 && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(5));
  Check(ran.load() == 2, "both real-clock timeouts ran");
  absl::StatusOr<std::vector<tickwheel::Timeout>> left = timer->stop();
  Check(left.ok() && left->empty(), "stop() returns no leftovers");
  Check(!cancelled_ran, "the cancelled timeout never ran");
}

}  // namespace

int main() {
  IdleConnections();
  RealClockTimeouts();
  std::printf("installed consumer: tickwheel %s, %s\n", TICKWHEEL_VERSION,
              failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
