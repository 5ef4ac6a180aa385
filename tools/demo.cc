// tools/demo.cc: a tour of tickwheel in one second.
//
// Schedules a handful of timeouts with different delays on a 50 ms wheel,
// cancels one, stops the timer early and prints, as it happens, what fired
// when, then what stop() handed back.
//
//   bazel run //tools:demo

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

struct Job {
  std::string name;
  absl::Duration delay;
};

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(50);
  options.ticks_per_wheel = 64;
  options.thread_name = "demo-wheel";
  absl::StatusOr<std::unique_ptr<tickwheel::Timer>> created =
      tickwheel::Timer::Create(options);
  if (!created.ok()) {
    fmt::print(stderr, "Timer::Create failed: {}\n", created.status().ToString());
    return 1;
  }
  tickwheel::Timer& timer = **created;

  const absl::Time start = absl::Now();
  auto since_start = [start] {
    return absl::ToDoubleMilliseconds(absl::Now() - start);
  };
  fmt::print("tickwheel demo: tick {}, {} buckets (one turn = {})\n\n",
             absl::FormatDuration(timer.tickDuration()), timer.ticksPerWheel(),
             absl::FormatDuration(timer.tickDuration() * timer.ticksPerWheel()));

  const std::vector<Job> jobs = {
      {"retry request #1", absl::Milliseconds(120)},
      {"request deadline", absl::Milliseconds(300)},
      {"cache refresh", absl::Milliseconds(450)},  // cancelled below
      {"lease renewal", absl::Milliseconds(700)},
      {"idle connection", absl::Seconds(5)},   // still pending at stop()
      {"daily report", absl::Hours(24)},        // many turns of the wheel away
  };
  std::vector<tickwheel::Timeout> handles;
  for (const Job& job : jobs) {
    absl::StatusOr<tickwheel::Timeout> t = timer.newTimeout(
        [name = job.name, delay = job.delay,
         since_start](const tickwheel::Timeout&) {
          fmt::print("  {:7.1f} ms  fired  {:<16} (asked for {})\n",
                     since_start(), name, absl::FormatDuration(delay));
        },
        job.delay);
    if (!t.ok()) {
      fmt::print(stderr, "newTimeout failed: {}\n", t.status().ToString());
      return 1;
    }
    handles.push_back(*t);
    fmt::print("  {:7.1f} ms  scheduled {:<16} in {}\n", since_start(), job.name,
               absl::FormatDuration(job.delay));
  }

  absl::SleepFor(absl::Milliseconds(200));
  const bool cancelled = handles[2].cancel();
  fmt::print("  {:7.1f} ms  cancel({}) -> {}; pending now {}\n", since_start(),
             jobs[2].name, cancelled, timer.pendingTimeouts());

  absl::SleepFor(absl::Milliseconds(700));
  fmt::print("  {:7.1f} ms  stop() with {} pending\n", since_start(),
             timer.pendingTimeouts());
  absl::StatusOr<std::vector<tickwheel::Timeout>> left = timer.stop();
  if (!left.ok()) {
    fmt::print(stderr, "stop failed: {}\n", left.status().ToString());
    return 1;
  }

  fmt::print("\nstop() returned {} timeout(s) that never ran:\n", left->size());
  for (const tickwheel::Timeout& t : *left) {
    for (size_t i = 0; i < handles.size(); ++i) {
      if (handles[i] == t) {
        fmt::print("  {:<16} isCancelled={} task still inside={}\n",
                   jobs[i].name, t.isCancelled(), t.takeTask() != nullptr);
      }
    }
  }
  fmt::print("\nstatus of every handle:\n");
  for (size_t i = 0; i < handles.size(); ++i) {
    fmt::print("  {:<16} expired={:<5} cancelled={}\n", jobs[i].name,
               handles[i].isExpired(), handles[i].isCancelled());
  }
  fmt::print("\nmetrics: {}\n", timer.metrics());
  return 0;
}
