// examples/coro_stop_source.cc
// -----------------------------------------------------------------------------
// Coroutine sleeps on a Timer (tickwheel/timer/coro.h), ended by a
// std::stop_source.
//
// A poller coroutine wakes every 20 ms with `co_await SleepFor(timer, 20ms,
// token)` and polls; the main thread lets it poll a few times, then calls
// request_stop(): the sleep in progress ends with Cancelled at the next tick,
// resumed by the timer's worker (never inside request_stop()), and the
// poller returns. A second coroutine sleeps for an hour; stop() ends that
// sleep with FailedPrecondition before it returns.
//
// The coroutine type here (Job) is the smallest that works: SleepFor() asks
// nothing of the promise, so any coroutine library's task type awaits it
// the same way.
//
// Exits 0 when every check passes.

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <future>
#include <memory>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/timer.h"

using namespace std::chrono_literals;

namespace {

// A coroutine that starts at once and hands its result to a std::future.
template <typename T>
struct Job {
  struct promise_type {
    std::promise<T> result;
    Job get_return_object() { return Job{result.get_future()}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_value(T value) { result.set_value(std::move(value)); }
    void unhandled_exception() {
      result.set_exception(std::current_exception());
    }
  };
  std::future<T> result;
};

// Polls every 20 ms until its sleep ends otherwise than OK; returns why.
Job<absl::Status> Poll(tickwheel::Timer& timer, std::stop_token stop,
                       std::atomic<int>& polls) {
  while (true) {
    absl::Status slept = co_await tickwheel::SleepFor(timer, 20ms, stop);
    if (!slept.ok()) co_return slept;
    polls.fetch_add(1);  // here: on the timer's worker thread
  }
}

Job<absl::Status> SleepAnHour(tickwheel::Timer& timer) {
  co_return co_await tickwheel::SleepFor(timer, absl::Hours(1));
}

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  std::unique_ptr<tickwheel::Timer> timer =
      tickwheel::Timer::Create(options).value();

  // 1. A stop_source ends the poller's sleep.
  std::stop_source source;
  std::atomic<int> polls{0};
  Job<absl::Status> poller = Poll(*timer, source.get_token(), polls);
  for (int i = 0; i < 2000 && polls.load() < 3; ++i) {
    std::this_thread::sleep_for(5ms);  // a generous bound: 10 s in all
  }
  Check(polls.load() >= 3, "the poller polled at least three times");
  source.request_stop();  // returns at once; the worker resumes the poller
  const bool ended = poller.result.wait_for(10s) == std::future_status::ready;
  Check(ended, "the poller ended after request_stop()");
  if (ended) {
    const absl::Status why = poller.result.get();
    std::printf("      the poller ended with: %s\n", why.ToString().c_str());
    Check(why.code() == absl::StatusCode::kCancelled,
          "its sleep ended with Cancelled");
  }

  // 2. stop() ends a sleep in progress, before it returns.
  Job<absl::Status> sleeper = SleepAnHour(*timer);
  Check(timer->pendingTimeouts() == 1, "a suspended sleep is one timeout");
  std::vector<tickwheel::Timeout> left = timer->stop().value();
  Check(left.empty(), "stop() returns no sleep");
  Check(sleeper.result.wait_for(0s) == std::future_status::ready,
        "the sleeper resumed before stop() returned");
  Check(sleeper.result.get().code() == absl::StatusCode::kFailedPrecondition,
        "its sleep ended with FailedPrecondition");

  // 3. On a stopped timer a sleep fails at once, without suspending.
  Job<absl::Status> late = SleepAnHour(*timer);
  Check(late.result.wait_for(0s) == std::future_status::ready &&
            late.result.get().code() == absl::StatusCode::kFailedPrecondition,
        "a sleep on a stopped timer fails at once");

  std::printf("%s\n", failures == 0 ? "all checks passed" : "checks FAILED");
  return failures == 0 ? 0 : 1;
}
