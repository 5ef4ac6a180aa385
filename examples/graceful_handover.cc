// examples/graceful_handover.cc: hand the pending timeouts of one Timer to
// another, e.g. to move to a finer tick without losing or repeating work.
//
// stop() returns every timeout that neither ran nor was cancelled, earliest
// first, with its task still inside. For each, the time it had left is its
// deadline() minus the old timer's now(); takeTask() moves the task out, and
// the new timer schedules it that far ahead. Every task then runs exactly
// once, on one timer or the other, and none runs before its deadline.
//
// Here both timers read the default clock, so newTimeoutAt(task,
// t.deadline()) would keep the exact deadline as well. Carrying the time
// left also works between timers on different clocks (a ManualClock in a
// test, a simulation's clock), whose time points cannot be compared.
//
//   bazel run //examples:graceful_handover

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::duration<double, std::milli>;
using tickwheel::Timeout;
using tickwheel::Timer;

constexpr int kJobs = 8;

// Which jobs ran, how often, on which timer, and whether any ran early.
class Ledger {
 public:
  void Ran(int job, Clock::time_point due, const Timer* timer) {
    const bool early = Clock::now() < due;
    std::lock_guard<std::mutex> lock(mu_);
    ++runs_[job];
    ran_on_[job] = timer;
    early_ += early;
    ++total_;
    cv_.notify_all();
  }
  bool AwaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [this] { return total_ >= kJobs; });
  }
  // Call once no timer can run a task any more.
  int runs(int job) const { return runs_[job]; }
  const Timer* ran_on(int job) const { return ran_on_[job]; }
  int early() const { return early_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int runs_[kJobs] = {};
  const Timer* ran_on_[kJobs] = {};
  int early_ = 0, total_ = 0;
};

// Schedules each of `left` (what stop() returned at `old_now`) on `to`, as
// far ahead as it had left; false (after saying so) if `to` refuses one.
bool HandOver(const std::vector<Timeout>& left, Clock::time_point old_now,
              Timer& to, Clock::time_point start) {
  for (const Timeout& t : left) {
    const Clock::duration remaining =
        std::max(t.deadline() - old_now, Clock::duration::zero());
    absl::StatusOr<Timeout> moved = to.newTimeout(t.takeTask(), remaining);
    if (!moved.ok()) {  // the new timer refused it: say so rather than drop it
      fmt::print("  handover failed: {}\n", moved.status().ToString());
      return false;
    }
    fmt::print(
        "  due at {:3.0f} ms, {:5.1f} ms left (cancelled on the old timer: "
        "{})\n",
        Ms(t.deadline() - start).count(), Ms(remaining).count(),
        t.isCancelled());
  }
  return true;
}

}  // namespace

int main() {
  Ledger ledger;  // declared before the timers, so it outlives their tasks
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(50);
  auto old_timer = Timer::Create(options).value();
  options.tick_duration = absl::Milliseconds(5);
  auto new_timer = Timer::Create(options).value();

  const Clock::time_point start = old_timer->now();
  for (int job = 0; job < kJobs; ++job) {
    const Clock::time_point due =
        start + std::chrono::milliseconds(40 + 80 * job);
    // The task knows its own deadline, to check that it never runs early. The
    // Timeout it receives names the timer that runs it (timer() is always
    // safe inside the task).
    old_timer
        ->newTimeoutAt(
            [&ledger, job, due](const Timeout& self) {
              ledger.Ran(job, due, self.timer());
            },
            due)
        .value();
  }
  fmt::print("{} jobs due every 80 ms from 40 ms on a 50 ms wheel\n", kJobs);

  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  std::vector<Timeout> left = old_timer->stop().value();
  const Clock::time_point old_now = old_timer->now();
  fmt::print(
      "stop() at {:.0f} ms returned {} pending; handing them to a 5 ms "
      "wheel:\n",
      Ms(old_now - start).count(), left.size());
  if (!HandOver(left, old_now, *new_timer, start)) return 1;

  const bool all_ran = ledger.AwaitAll();
  // After stop() no task runs: the ledger is final.
  const size_t still_pending = new_timer->stop().value().size();
  int on_old = 0, on_new = 0, not_once = 0;
  for (int job = 0; job < kJobs; ++job) {
    not_once += ledger.runs(job) != 1;
    on_old += ledger.ran_on(job) == old_timer.get();
    on_new += ledger.ran_on(job) == new_timer.get();
  }
  fmt::print(
      "ran on the old timer: {}, on the new: {}, early: {}, not exactly once: "
      "{}\n",
      on_old, on_new, ledger.early(), not_once);
  const bool ok =
      all_ran && still_pending == 0 && not_once == 0 && ledger.early() == 0 &&
      on_new == static_cast<int>(left.size()) && on_old + on_new == kJobs;
  fmt::print("{}\n",
             ok ? "OK: every job ran exactly once, none early" : "WRONG");
  return ok ? 0 : 1;
}
