// The coroutine sleeps of timer/coro.h: the handshake between the awaiting
// thread and the sleep's task, and the Timer's way to schedule a sleep.

#include "tickwheel/timer/coro.h"

#include "tickwheel/timer/internal/library_timeouts.h"

namespace tickwheel {

namespace internal {

namespace {

absl::StatusOr<Timeout> ScheduleOnTimer(void* timer, SleepTask& task,
                                        DeadlineSpec when) {
  return LibraryTimeouts::Schedule(*static_cast<Timer*>(timer), std::move(task),
                                   when);
}

}  // namespace

SleepTarget SleepTargetOf(Timer& timer) {
  return {.timer = &timer,
          .schedule = &ScheduleOnTimer,
          .expedite = &ExpediteByReset};
}

void ExpediteByReset(void* /*timer*/, const Timeout& timeout) {
  timeout.reset(absl::ZeroDuration());
}

SleepTask::~SleepTask() {
  if (sleep_ == nullptr) return;
  std::exchange(sleep_, nullptr)
      ->End(absl::FailedPreconditionError(
          "sleep: the timer was stopped before the sleep ended"));
}

void SleepTask::operator()() {
  // The pointer goes first: the coroutine may finish, and free the
  // Awaitable, inside End(), before this task is destroyed.
  Awaitable* sleep = std::exchange(sleep_, nullptr);
  sleep->End(sleep->stop_.stop_requested()
                 ? absl::CancelledError("sleep: stop was requested")
                 : absl::OkStatus());
}

}  // namespace internal

bool Awaitable::await_ready() noexcept {
  if (!status_.ok()) return true;
  if (stop_.stop_requested()) {
    status_ = absl::CancelledError("sleep: stop was requested");
    return true;
  }
  return false;
}

bool Awaitable::await_suspend(std::coroutine_handle<> coroutine) {
  coroutine_ = coroutine;
  internal::SleepTask task(this);
  absl::StatusOr<Timeout> timeout =
      target_.schedule(target_.timer, task, when_);
  if (!timeout.ok()) {
    task.Release();
    status_ = timeout.status();
    return false;
  }
  // The task may run from here on, but resumes nothing before kSuspended.
  timeout_ = *std::move(timeout);
  // A stop requested since await_ready() runs the callback here, on this
  // thread: it moves the timeout to now, and the timer resumes us.
  if (stop_.stop_possible()) on_stop_.emplace(stop_, OnStop{this});
  // Past this RMW, `this` may be gone (the task resumed the coroutine).
  return !(state_.fetch_or(kSuspended, std::memory_order_acq_rel) & kEnded);
}

absl::Status Awaitable::await_resume() {
  // Waits for a callback running on another thread, which reads timeout_.
  on_stop_.reset();
  timeout_ = Timeout();
  return std::move(status_);
}

void Awaitable::OnStop::operator()() const noexcept {
  // Nothing when the task has run or is running, or the timer has stopped:
  // then the sleep ends that way.
  sleep->target_.expedite(sleep->target_.timer, sleep->timeout_);
}

void Awaitable::End(absl::Status status) {
  status_ = std::move(status);
  // Release: status_ to an await_suspend() that has not finished. Acquire:
  // what it wrote, when it has.
  if (state_.fetch_or(kEnded, std::memory_order_acq_rel) & kSuspended) {
    coroutine_.resume();
  }
}

}  // namespace tickwheel
