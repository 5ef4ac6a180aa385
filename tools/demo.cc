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

using tickwheel::Timeout;
using tickwheel::Timer;

struct Job {
  std::string name;
  absl::Duration delay;
};

// The one-shot timeouts, in the order they are scheduled; the steps below
// name two of them by index.
constexpr size_t kPushedBack = 1, kCancelled = 2;
std::vector<Job> Jobs() {
  return {
      {"retry request #1", absl::Milliseconds(120)},
      {"request deadline", absl::Milliseconds(300)},  // pushed back below
      {"cache refresh", absl::Milliseconds(450)},     // cancelled below
      {"lease renewal", absl::Milliseconds(700)},
      {"idle connection", absl::Seconds(5)},  // still pending at stop()
      {"daily report", absl::Hours(24)},      // many turns of the wheel away
  };
}

// Times are printed in ms since start, on the timer's clock (by default
// std::chrono::steady_clock, the scale of Timeout::deadline()).
struct Ms {
  tickwheel::TimePoint start;
  double At(tickwheel::TimePoint t) const {
    return std::chrono::duration<double, std::milli>(t - start).count();
  }
  double Now() const { return At(std::chrono::steady_clock::now()); }
};

int Fail(const char* what, const absl::Status& status) {
  fmt::print(stderr, "{} failed: {}\n", what, status.ToString());
  return 1;
}

absl::StatusOr<std::unique_ptr<Timer>> CreateTimer() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(50);
  options.ticks_per_wheel = 64;
  options.thread_name = "demo-wheel";
  return Timer::Create(options);
}

// Schedules every job; each task prints when it fires against its deadline.
absl::StatusOr<std::vector<Timeout>> ScheduleJobs(Timer& timer,
                                                  const std::vector<Job>& jobs,
                                                  Ms ms) {
  std::vector<Timeout> handles;
  for (const Job& job : jobs) {
    absl::StatusOr<Timeout> t = timer.newTimeout(
        [name = job.name, ms](const Timeout& self) {
          fmt::print("  {:7.1f} ms  fired  {:<16} (due at {:.1f} ms)\n",
                     ms.Now(), name, ms.At(self.deadline()));
        },
        job.delay);
    if (!t.ok()) return t.status();
    handles.push_back(*t);
    fmt::print("  {:7.1f} ms  scheduled {:<16} in {}\n", ms.Now(), job.name,
               absl::FormatDuration(job.delay));
  }
  return handles;
}

// A heartbeat: every 200 ms from 100 ms. Runs never overlap, so the count
// needs no atomic; the task takes its Timeout to cancel itself.
absl::StatusOr<Timeout> ScheduleHeartbeat(Timer& timer, Ms ms) {
  absl::StatusOr<Timeout> heartbeat = timer.newPeriodic(
      [beats = 0, ms](const Timeout& self) mutable {
        ++beats;
        fmt::print("  {:7.1f} ms  heartbeat #{} (due at {:.1f} ms){}\n",
                   ms.Now(), beats, ms.At(self.deadline()),
                   beats == 4 ? ", the last: it cancels itself" : "");
        if (beats == 4) self.cancel();
      },
      absl::Milliseconds(100), absl::Milliseconds(200));
  if (heartbeat.ok()) {
    fmt::print(
        "  {:7.1f} ms  scheduled heartbeat        every 200ms from 100ms\n",
        ms.Now());
  }
  return heartbeat;
}

// At 200 ms the cache refresh is cancelled and the request deadline moves
// back by 250 ms; at 400 ms it moves back again (more data arrived).
void CancelOneAndPushOneBack(Timer& timer, const std::vector<Job>& jobs,
                             std::vector<Timeout>& handles, Ms ms) {
  auto push_back = [&] {
    Timeout& deadline = handles[kPushedBack];
    const bool moved = deadline.reset(absl::Milliseconds(250));
    fmt::print("  {:7.1f} ms  reset({}, 250ms) -> {}; now due at {:.1f} ms\n",
               ms.Now(), jobs[kPushedBack].name, moved,
               ms.At(deadline.deadline()));
  };
  absl::SleepFor(absl::Milliseconds(200));
  const bool cancelled = handles[kCancelled].cancel();
  fmt::print("  {:7.1f} ms  cancel({}) -> {}; pending now {}\n", ms.Now(),
             jobs[kCancelled].name, cancelled, timer.pendingTimeouts());
  push_back();
  absl::SleepFor(absl::Milliseconds(200));
  push_back();
}

// What stop() handed back, and then the state of every handle.
void PrintWhatIsLeft(const std::vector<Timeout>& left,
                     const std::vector<Job>& jobs,
                     const std::vector<Timeout>& handles,
                     const Timeout& heartbeat) {
  fmt::print("\nstop() returned {} timeout(s) that never ran:\n", left.size());
  for (const Timeout& t : left) {
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
             heartbeat.isPeriodic(), heartbeat.isCancelled());
}

void PrintLateness(const tickwheel::TimerMetrics& metrics) {
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
}

}  // namespace

int main() {
  absl::StatusOr<std::unique_ptr<Timer>> created = CreateTimer();
  if (!created.ok()) return Fail("Timer::Create", created.status());
  Timer& timer = **created;
  const Ms ms{timer.now()};
  fmt::print(
      "tickwheel demo: tick {}, {} buckets (one turn = {})\n\n",
      absl::FormatDuration(timer.tickDuration()), timer.ticksPerWheel(),
      absl::FormatDuration(timer.tickDuration() * timer.ticksPerWheel()));

  const std::vector<Job> jobs = Jobs();
  absl::StatusOr<std::vector<Timeout>> handles = ScheduleJobs(timer, jobs, ms);
  if (!handles.ok()) return Fail("newTimeout", handles.status());
  absl::StatusOr<Timeout> heartbeat = ScheduleHeartbeat(timer, ms);
  if (!heartbeat.ok()) return Fail("newPeriodic", heartbeat.status());
  CancelOneAndPushOneBack(timer, jobs, *handles, ms);

  absl::SleepFor(absl::Milliseconds(500));
  fmt::print("  {:7.1f} ms  stop() with {} pending\n", ms.Now(),
             timer.pendingTimeouts());
  absl::StatusOr<std::vector<Timeout>> left = timer.stop();
  if (!left.ok()) return Fail("stop", left.status());
  PrintWhatIsLeft(*left, jobs, *handles, *heartbeat);
  PrintLateness(timer.metrics());
  return 0;
}
