// Schedules one timeout through @tickwheel//timer and checks that it ran,
// while including an application header of the same path as tickwheel's
// (timer/timer.h): tickwheel's headers are included with their tickwheel/
// prefix, so the two cannot collide.
#include <atomic>
#include <cstdio>

#include "absl/time/clock.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/timer.h"
#include "timer/timer.h"  // the application's own

int main() {
  auto timer = tickwheel::Timer::Create().value();
  std::atomic<bool> ran{false};
  timer
      ->newTimeout([&](const tickwheel::Timeout&) { ran = true; },
                   absl::Milliseconds(app::kRequestBudgetMs))
      .value();
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!ran && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  std::printf("consumer: tickwheel %s, timeout %s\n", TICKWHEEL_VERSION,
              ran ? "ran" : "did NOT run");
  return ran ? 0 : 1;
}
