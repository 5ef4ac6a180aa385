// Schedules one timeout through @tickwheel//timer and checks that it ran.
#include <atomic>
#include <cstdio>

#include "absl/time/clock.h"
#include "timer/timer.h"

int main() {
  auto timer = tickwheel::Timer::Create().value();
  std::atomic<bool> ran{false};
  timer->newTimeout([&](const tickwheel::Timeout&) { ran = true; },
                    absl::Milliseconds(10))
      .value();
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!ran && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  std::printf("consumer: timeout %s\n", ran ? "ran" : "did NOT run");
  return ran ? 0 : 1;
}
