// timer/coro_task.h
// -----------------------------------------------------------------------------
// tickwheel::CoroTask: the smallest coroutine type to co_await SleepFor()
// and SleepUntil() (timer/coro.h) in, for a program that has no coroutine
// library of its own. Header-only; Bazel //timer:coro_task, part of CMake
// tickwheel::timer.
//
// Example (examples/coro_task.cc is a whole program):
//
//   tickwheel::CoroTask Countdown(tickwheel::Timer& timer, int n) {
//     for (int i = n; i > 0; --i) co_await tickwheel::SleepFor(timer, 100ms);
//   }
//   auto timer = tickwheel::Timer::Create().value();
//   Countdown(*timer, 3).get();   // waits for it; rethrows what it threw
//
// What it is. Calling a CoroTask coroutine runs it at once, on the calling
// thread, up to its first suspension (eager, as a plain function call);
// it then goes on wherever what it awaits resumes it (for a sleep on a
// Timer: the worker thread, or the task_executor; on a LocalTimer: inside
// advance()). The CoroTask returned owns the coroutine's frame: done() and
// wait() tell when the body has finished, get() also rethrows an exception
// that escaped it. It yields no value: a coroutine that computes one writes
// it where its caller reads it after wait().
//
// A CoroTask awaits anything; it is not itself awaitable (a coroutine
// library's task type is, and composes: asio::awaitable with AsyncSleep()
// of timer/asio.h, folly::coro::Task, cppcoro::task all await SleepFor()).
//
// Destruction. Destroying a CoroTask whose body finished frees the frame.
// Destroying one still suspended destroys the frame there: a SleepFor() it
// is suspended in cancels its timeout (timer/coro.h, "Destroying a
// coroutine suspended in a sleep"), and nothing resumes it. That must not
// race its resumption: destroy it where the timer resumes it (a
// LocalTimer's owner thread), or after wait(), or once the timer is
// stopped.
//
// Thread-safety: done(), wait() and get() may be called from any one
// thread while the coroutine runs on another; the finish is published with
// release/acquire ordering, so what the body wrote before it finished is
// visible after done() is true or wait() returns.
// Cost: the coroutine frame (one allocation, as any coroutine's) and one
// small shared block for the finish flag.

#ifndef TICKWHEEL_TIMER_CORO_TASK_H_
#define TICKWHEEL_TIMER_CORO_TASK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <atomic>
#include <coroutine>
#include <exception>
#include <memory>
#include <utility>

namespace tickwheel {

class CoroTask {
 public:
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  // The finish flag, shared: the coroutine notifies waiters after it sets
  // the flag, when the CoroTask (and so the frame) may be gone already.
  struct Finish {
    std::atomic<bool> done{false};
  };

  struct promise_type {
    std::shared_ptr<Finish> finish = std::make_shared<Finish>();
    std::exception_ptr error;

    CoroTask get_return_object() {
      return CoroTask(Handle::from_promise(*this));
    }
    // Eager: the body runs inside the call, up to its first suspension.
    std::suspend_never initial_suspend() noexcept { return {}; }
    // Suspends at the end, so the frame stays for get() to read `error`;
    // then publishes the finish (release) and wakes wait(). The flag is
    // reached through a copy of the shared block: once it is set, the
    // owner may destroy the frame.
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      void await_suspend(Handle h) noexcept {
        std::shared_ptr<Finish> finish = h.promise().finish;
        finish->done.store(true, std::memory_order_release);
        finish->done.notify_all();
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  CoroTask(CoroTask&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        finish_(std::move(other.finish_)) {}
  CoroTask& operator=(CoroTask&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
      finish_ = std::move(other.finish_);
    }
    return *this;
  }
  CoroTask(const CoroTask&) = delete;
  CoroTask& operator=(const CoroTask&) = delete;
  // Destroys the frame; see "Destruction" above for a suspended one.
  ~CoroTask() { Reset(); }

  // True once the body has finished (returned or thrown). False for a
  // moved-from CoroTask. Any thread; one acquire load.
  bool done() const noexcept {
    return finish_ != nullptr && finish_->done.load(std::memory_order_acquire);
  }

  // Blocks the calling thread until the body has finished (at once when it
  // has). Never call it on the thread that must resume the coroutine (a
  // LocalTimer's owner, which must go on calling advance()): that waits
  // forever. Returns at once for a moved-from CoroTask.
  void wait() const noexcept {
    if (finish_ == nullptr) return;
    while (!finish_->done.load(std::memory_order_acquire)) {
      finish_->done.wait(false, std::memory_order_acquire);
    }
  }

  // wait(), then rethrows the exception that escaped the body, if one did.
  void get() const {
    wait();
    if (handle_ && handle_.promise().error) {
      std::rethrow_exception(handle_.promise().error);
    }
  }

 private:
  explicit CoroTask(Handle handle)
      : handle_(handle), finish_(handle.promise().finish) {}

  void Reset() noexcept {
    if (handle_) std::exchange(handle_, nullptr).destroy();
    finish_.reset();
  }

  Handle handle_;
  std::shared_ptr<Finish> finish_;
};

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_CORO_TASK_H_
