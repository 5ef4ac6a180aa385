// examples/retry_backoff.cc: retry with exponential backoff and jitter.
//
// A Retrier runs an operation on the timer's thread; when it fails, the
// attempt itself schedules the next one on the timer, after a backoff that
// doubles each time up to a cap, with jitter so that many clients that failed
// together do not retry together. After max_attempts it gives up.
//
// The Timer here is the program's own, and the rule that keeps the chain
// safe is the program's too: stop() the timer before destroying it. A task
// that then tries to reschedule gets FailedPrecondition and gives up, and
// stop() hands back (and so destroys) a retry not yet run. Reaching the
// timer through the task's Timeout instead (timeout.timer()) is safe only
// inside that task and yields nullptr while the Timer is being destroyed;
// a reference held by the program states who owns the timer.
//
// Attempts run on the timer's single worker thread, one at a time: an
// operation that blocks belongs on a thread pool (TimerOptions::task_executor
// hands every task to one).
//
//   bazel run //examples:retry_backoff

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Backoff {
  absl::Duration initial = absl::Milliseconds(20);
  absl::Duration cap = absl::Milliseconds(160);
  int max_attempts = 6;
};

class Retrier : public std::enable_shared_from_this<Retrier> {
 public:
  // `op(attempt)` returns true on success; attempts count from 1.
  Retrier(tickwheel::Timer& timer, std::string name,
          std::function<bool(int)> op, Backoff backoff, uint32_t seed)
      : timer_(timer),
        name_(std::move(name)),
        op_(std::move(op)),
        backoff_(backoff),
        rng_(seed) {}

  // Only the timer's thread touches the state below until done() is ready:
  // tasks run one at a time there, and scheduling happens-before the run.
  void Start() {
    start_ = Clock::now();
    Schedule(absl::ZeroDuration());
  }
  std::future<void> done() { return done_.get_future(); }
  int attempts() const { return attempts_; }
  bool succeeded() const { return succeeded_; }
  bool ran_early() const { return ran_early_; }

 private:
  void Schedule(absl::Duration delay) {
    planned_ = delay;
    scheduled_at_ = Clock::now();
    // The task keeps the Retrier alive until it runs or is destroyed unrun.
    absl::StatusOr<tickwheel::Timeout> next = timer_.newTimeout(
        [self = shared_from_this()] { self->Attempt(); }, delay);
    if (!next.ok()) {  // the timer was stopped: nobody will retry
      fmt::print("  {:<5} cannot retry: {}\n", name_, next.status().ToString());
      Finish(false);
    }
  }

  void Attempt() {
    const absl::Duration waited =
        absl::FromChrono(Clock::now() - scheduled_at_);
    if (waited < planned_) ran_early_ = true;
    ++attempts_;
    const std::string what =
        fmt::format("{:<5} attempt {} at {:3} ms", name_, attempts_,
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        Clock::now() - start_)
                        .count());
    if (op_(attempts_)) {
      fmt::print("  {}: succeeded\n", what);
      return Finish(true);
    }
    if (attempts_ == backoff_.max_attempts) {
      fmt::print("  {}: failed, giving up\n", what);
      return Finish(false);
    }
    // "Equal jitter": half the backoff for sure, the other half at random.
    const absl::Duration ceiling =
        std::min(backoff_.cap, backoff_.initial * (1 << (attempts_ - 1)));
    std::uniform_int_distribution<int64_t> half(
        0, absl::ToInt64Microseconds(ceiling / 2));
    const absl::Duration delay = ceiling / 2 + absl::Microseconds(half(rng_));
    fmt::print("  {}: failed, retry in {} (backoff {})\n", what,
               absl::FormatDuration(absl::Trunc(delay, absl::Milliseconds(1))),
               absl::FormatDuration(ceiling));
    Schedule(delay);
  }

  void Finish(bool succeeded) {
    succeeded_ = succeeded;
    done_.set_value();
  }

  tickwheel::Timer& timer_;
  const std::string name_;
  const std::function<bool(int)> op_;
  const Backoff backoff_;
  std::mt19937 rng_;  // seeded: the same delays on every run
  std::promise<void> done_;
  absl::Duration planned_;
  Clock::time_point start_, scheduled_at_;
  int attempts_ = 0;
  bool succeeded_ = false;
  bool ran_early_ = false;
};

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(5);
  auto timer = tickwheel::Timer::Create(options).value();
  const Backoff backoff;

  // "flaky" fails its first three attempts; "down" never succeeds.
  auto flaky = std::make_shared<Retrier>(
      *timer, "flaky", [](int attempt) { return attempt > 3; }, backoff, 1);
  auto down = std::make_shared<Retrier>(
      *timer, "down", [](int) { return false; }, backoff, 2);
  fmt::print("backoff from {} doubling up to {}, at most {} attempts\n",
             absl::FormatDuration(backoff.initial),
             absl::FormatDuration(backoff.cap), backoff.max_attempts);
  std::future<void> flaky_done = flaky->done(), down_done = down->done();
  flaky->Start();
  down->Start();
  const bool finished =
      flaky_done.wait_for(std::chrono::seconds(10)) ==
          std::future_status::ready &&
      down_done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  // Before the Timer goes: after stop(), no task runs and none can schedule.
  const size_t left = timer->stop().value().size();

  const bool ok = finished && left == 0 && flaky->succeeded() &&
                  flaky->attempts() == 4 && !down->succeeded() &&
                  down->attempts() == backoff.max_attempts &&
                  !flaky->ran_early() && !down->ran_early();
  fmt::print("{}\n",
             ok ? "OK: every retry waited at least its delay" : "WRONG");
  return ok ? 0 : 1;
}
