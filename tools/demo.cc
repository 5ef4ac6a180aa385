// tools/demo.cc: a tour of tickwheel in one second.
//
// On a 50 ms wheel: a handful of one-shot timeouts with different delays, one
// of them cancelled and one pushed back twice with reset(); a heartbeat that
// runs every 200 ms with newPeriodic() and cancels itself after four beats.
// Prints, as it happens, what fired when against its deadline, then stops the
// timer early and shows what stop() handed back, and how late the tasks ran.
//
//   bazel run //tools:demo

#include <chrono>
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
    fmt::print(stderr, "Timer::Create failed: {}\n",
               created.status().ToString());
    return 1;
  }
  tickwheel::Timer& timer = **created;

  // Times are printed in ms since start, on the timer's clock (by default
  // std::chrono::steady_clock, the scale of Timeout::deadline()).
  const tickwheel::TimePoint start = timer.now();
  auto at = [start](tickwheel::TimePoint t) {
    return std::chrono::duration<double, std::milli>(t - start).count();
  };
  auto since_start = [at] { return at(std::chrono::steady_clock::now()); };
  fmt::print(
      "tickwheel demo: tick {}, {} buckets (one turn = {})\n\n",
      absl::FormatDuration(timer.tickDuration()), timer.ticksPerWheel(),
      absl::FormatDuration(timer.tickDuration() * timer.ticksPerWheel()));

  const std::vector<Job> jobs = {
      {"retry request #1", absl::Milliseconds(120)},
      {"request deadline", absl::Milliseconds(300)},  // pushed back below
      {"cache refresh", absl::Milliseconds(450)},     // cancelled below
      {"lease renewal", absl::Milliseconds(700)},
      {"idle connection", absl::Seconds(5)},  // still pending at stop()
      {"daily report", absl::Hours(24)},      // many turns of the wheel away
  };
  std::vector<tickwheel::Timeout> handles;
  for (const Job& job : jobs) {
    absl::StatusOr<tickwheel::Timeout> t = timer.newTimeout(
        [name = job.name, at, since_start](const tickwheel::Timeout& self) {
          fmt::print("  {:7.1f} ms  fired  {:<16} (due at {:.1f} ms)\n",
                     since_start(), name, at(self.deadline()));
        },
        job.delay);
    if (!t.ok()) {
      fmt::print(stderr, "newTimeout failed: {}\n", t.status().ToString());
      return 1;
    }
    handles.push_back(*t);
    fmt::print("  {:7.1f} ms  scheduled {:<16} in {}\n", since_start(),
               job.name, absl::FormatDuration(job.delay));
  }

  // A heartbeat: every 200 ms from 100 ms. Runs never overlap, so the count
  // needs no atomic; the task takes its Timeout to cancel itself.
  absl::StatusOr<tickwheel::Timeout> heartbeat = timer.newPeriodic(
      [beats = 0, at, since_start](const tickwheel::Timeout& self) mutable {
        ++beats;
        fmt::print("  {:7.1f} ms  heartbeat #{} (due at {:.1f} ms){}\n",
                   since_start(), beats, at(self.deadline()),
                   beats == 4 ? ", the last: it cancels itself" : "");
        if (beats == 4) self.cancel();
      },
      absl::Milliseconds(100), absl::Milliseconds(200));
  if (!heartbeat.ok()) {
    fmt::print(stderr, "newPeriodic failed: {}\n",
               heartbeat.status().ToString());
    return 1;
  }
  fmt::print(
      "  {:7.1f} ms  scheduled heartbeat        every 200ms from 100ms\n",
      since_start());

  // The request deadline moves back by 250 ms twice (more data arrived).
  auto push_back = [&] {
    const bool moved = handles[1].reset(absl::Milliseconds(250));
    fmt::print("  {:7.1f} ms  reset({}, 250ms) -> {}; now due at {:.1f} ms\n",
               since_start(), jobs[1].name, moved, at(handles[1].deadline()));
  };
  absl::SleepFor(absl::Milliseconds(200));
  const bool cancelled = handles[2].cancel();
  fmt::print("  {:7.1f} ms  cancel({}) -> {}; pending now {}\n", since_start(),
             jobs[2].name, cancelled, timer.pendingTimeouts());
  push_back();
  absl::SleepFor(absl::Milliseconds(200));
  push_back();

  absl::SleepFor(absl::Milliseconds(500));
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
  fmt::print("  {:<16} periodic={:<4} cancelled={}\n", "heartbeat",
             heartbeat->isPeriodic(), heartbeat->isCancelled());

  const tickwheel::TimerMetrics metrics = timer.metrics();
  const tickwheel::LatenessHistogram& late = metrics.lateness;
  fmt::print(
      "\nlateness (start of run - deadline) over {} runs: p50 {}, p90 {}, "
      "p99 {}, max {}\n  (a task runs at the first tick at or after its "
      "deadline, never before)\n",
      late.count(), absl::FormatDuration(late.Percentile(0.5)),
      absl::FormatDuration(late.Percentile(0.9)),
      absl::FormatDuration(late.Percentile(0.99)),
      absl::FormatDuration(late.max()));
  fmt::print("metrics: {}\n", metrics);
  return 0;
}
