// Built with nothing but `pkg-config --cflags --libs tickwheel`. A periodic
// timeout and a one-shot one on a ManualClock, checked run by run; then
// stop() hands back the timeout that had not run yet, with its task, which
// the program runs itself. Exits non-zero on any unexpected result.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

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
  std::unique_ptr<tickwheel::Timer> timer =
      tickwheel::Timer::Create(options).value();

  // Touched only by the worker, and read here after AdvanceInSteps() has
  // waited for it: the clock's settling orders the two.
  std::vector<int64_t> heartbeats;  // clock readings of the periodic runs
  bool flushed = false;
  tickwheel::Timeout heartbeat =
      timer
          ->newPeriodic([&] { heartbeats.push_back(clock->NowNanos() / kMs); },
                        absl::Milliseconds(50), absl::Milliseconds(50))
          .value();
  tickwheel::Timeout flush =
      timer->newTimeout([&] { flushed = true; }, std::chrono::seconds(10))
          .value();
  Check(heartbeat.isPeriodic() && !flush.isPeriodic(),
        "one periodic, one one-shot");

  clock->AdvanceInSteps(absl::Milliseconds(220), timer->tickDuration());
  Check(heartbeats == std::vector<int64_t>({50, 100, 150, 200}),
        "the periodic task ran every 50 ms, on time");
  Check(heartbeat.cancel(), "cancel() ends the periodic timeout");
  clock->AdvanceInSteps(absl::Milliseconds(100), timer->tickDuration());
  Check(heartbeats.size() == 4, "and it runs no more");
  Check(timer->pendingTimeouts() == 1, "the 10 s timeout is still pending");

  std::vector<tickwheel::Timeout> left = timer->stop().value();
  Check(left.size() == 1 && left[0] == flush,
        "stop() returns the pending timeout");
  Check(!flushed, "whose task did not run");
  tickwheel::TimerTask task = left.empty() ? nullptr : left[0].takeTask();
  Check(static_cast<bool>(task), "takeTask() hands the task over");
  if (task) task(left[0]);
  Check(flushed, "and the program ran it itself");

  std::printf("pkg-config consumer: tickwheel %s, %s\n", TICKWHEEL_VERSION,
              failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
