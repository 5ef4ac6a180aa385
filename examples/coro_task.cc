// examples/coro_task.cc
// -----------------------------------------------------------------------------
// The five-line coroutine: `co_await SleepFor()` (tickwheel/timer/coro.h)
// inside tickwheel::CoroTask (tickwheel/timer/coro_task.h), the smallest
// coroutine type, for a program without a coroutine library.
//
//   tickwheel::CoroTask Countdown(tickwheel::Timer& timer, int& left) {
//     for (; left > 0; --left) co_await tickwheel::SleepFor(timer, 10ms);
//   }
//   auto timer = tickwheel::Timer::Create().value();
//   int left = 3;
//   Countdown(*timer, left).get();
//
// The coroutine starts on the calling thread and goes on, after each sleep,
// on the timer's worker thread; get() waits for its end and rethrows what
// escaped it. A second coroutine shows that: it throws after one sleep, and
// get() hands the exception to main.
//
// Exits 0 when every check passes.

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/coro_task.h"
#include "tickwheel/timer/timer.h"

using namespace std::chrono_literals;

namespace {

tickwheel::CoroTask Countdown(tickwheel::Timer& timer, int& left) {
  for (; left > 0; --left) co_await tickwheel::SleepFor(timer, 10ms);
}

// Throws once its sleep has ended: get() rethrows it on the waiting thread.
tickwheel::CoroTask FailAfterASleep(tickwheel::Timer& timer) {
  absl::Status slept = co_await tickwheel::SleepFor(timer, 5ms);
  throw std::runtime_error("slept: " + slept.ToString());
}

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += ok ? 0 : 1;
}

}  // namespace

int main() {
  auto timer = tickwheel::Timer::Create().value();

  int left = 3;
  tickwheel::CoroTask countdown = Countdown(*timer, left);
  Check(!countdown.done(), "the countdown is suspended in its first sleep");
  countdown.get();
  Check(countdown.done() && left == 0, "the countdown ran to zero");

  std::string caught;
  try {
    FailAfterASleep(*timer).get();
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  Check(caught == "slept: OK", "get() rethrew what the coroutine threw");
  Check(timer->pendingTimeouts() == 0, "no sleep is left pending");
  return failures == 0 ? 0 : 1;
}
