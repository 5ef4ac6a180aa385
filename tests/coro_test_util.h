// tests/coro_test_util.h
// -----------------------------------------------------------------------------
// A coroutine for the sleep tests: it awaits one sleep (timer/coro.h), or a
// chain of them, and records how each ended, how often it resumed and on
// which thread, so that a test can check that a sleep resumes exactly once,
// where the contract says.

#ifndef TICKWHEEL_TESTS_CORO_TEST_UTIL_H_
#define TICKWHEEL_TESTS_CORO_TEST_UTIL_H_

#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "tickwheel/timer/coro.h"

namespace tickwheel::testing {

// A coroutine that starts at once and frees its frame when it finishes.
struct Detached {
  struct promise_type {
    Detached get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

// How sleeps ended. resumes counts the ends (release), after status and
// thread are written; readers load it with acquire, or after a settle.
struct Outcome {
  std::atomic<int> resumes{0};
  std::mutex mu;
  absl::Status status;
  std::thread::id thread;

  void Record(absl::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      thread = std::this_thread::get_id();
    }
    resumes.fetch_add(1, std::memory_order_release);
  }
  absl::Status Status() {
    std::lock_guard<std::mutex> lock(mu);
    return status;
  }
  std::thread::id Thread() {
    std::lock_guard<std::mutex> lock(mu);
    return thread;
  }
};

// Awaits `sleep` (moved into the frame before it is awaited) and records
// how it ended.
inline Detached AwaitSleep(Awaitable sleep, Outcome* out) {
  absl::Status s = co_await std::move(sleep);
  out->Record(std::move(s));
}

// Awaits make() `rounds` times in a row, recording each end; stops early
// at the first status that is not OK.
inline Detached AwaitSleeps(std::function<Awaitable()> make, int rounds,
                            Outcome* out) {
  for (int i = 0; i < rounds; ++i) {
    absl::Status s = co_await make();
    const bool ok = s.ok();
    out->Record(std::move(s));
    if (!ok) co_return;
  }
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_CORO_TEST_UTIL_H_
