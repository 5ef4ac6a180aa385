// The coroutine sleeps of timer/coro.h: the state the awaiting coroutine and
// the sleep's task share, the handshake over it, and the Timer's way to
// schedule a sleep.

#include "tickwheel/timer/coro.h"

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <new>
#include <stop_token>
#include <utility>

#include "tickwheel/base/interleave.h"
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

// Ground rules. Two parties share the block: the Awaitable, from
// await_suspend() until await_resume() or its destructor, and the sleep's
// task, until it ends the sleep (run, or destroyed unrun). The Awaitable
// writes coroutine and stop before the timeout is scheduled (the timer's
// publication orders them before the task); the task writes status before it
// sets kEnded. Each party sets its bit with one acq_rel fetch_or, and what
// the other had set decides:
//   kSuspended  set by await_suspend() once it is done with the Awaitable:
//               the coroutine is the task's to resume. A task that comes
//               first (kSuspended not yet set) leaves it to await_suspend(),
//               which returns false.
//   kEnded      set by the task, once: a task that finds kSuspended (and not
//               kAbandoned) resumes the coroutine; the Awaitable frees the
//               block in await_resume().
//   kAbandoned  set by ~Awaitable of a suspended sleep that was never
//               resumed (the frame is being destroyed), before it cancels
//               the timeout: the task that comes later resumes nothing and
//               frees the block; an Awaitable that finds kEnded frees it.
// So whoever is second frees the block, after the first is done with it (the
// acq_rel pair orders the first one's accesses before the free), and the
// coroutine is resumed at most once, never after its frame is abandoned.
struct SleepState {
  std::atomic<uint32_t> bits{0};
  std::coroutine_handle<> coroutine;
  std::stop_token stop;
  absl::Status status;

  static constexpr uint32_t kSuspended = 1;
  static constexpr uint32_t kEnded = 2;
  static constexpr uint32_t kAbandoned = 4;

  // Called once, by the task: records `status` and resumes the coroutine,
  // or leaves that to await_suspend() if it has not finished yet, or frees
  // the block when the coroutine was destroyed.
  static void End(SleepState* state, absl::Status status) {
    const std::coroutine_handle<> coroutine = state->coroutine;
    state->status = std::move(status);
    TICKWHEEL_INTERLEAVE_POINT();
    const uint32_t before =
        state->bits.fetch_or(kEnded, std::memory_order_acq_rel);
    // Past this RMW the block may be the Awaitable's to free: only the
    // local copy of the handle is used.
    if (before & kAbandoned) {
      delete state;
    } else if (before & kSuspended) {
      coroutine.resume();
    }
  }
};

SleepTask::~SleepTask() {
  if (state_ == nullptr) return;
  SleepState::End(std::exchange(state_, nullptr),
                  absl::FailedPreconditionError(
                      "sleep: the timer was stopped before the sleep ended"));
}

void SleepTask::operator()() {
  // The pointer goes first: the coroutine may finish, and the block be
  // freed, inside End(), before this task is destroyed.
  SleepState* state = std::exchange(state_, nullptr);
  SleepState::End(state, state->stop.stop_requested()
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
  auto* state = new (std::nothrow) internal::SleepState;
  if (state == nullptr) {
    status_ = absl::ResourceExhaustedError("sleep: out of memory");
    return false;
  }
  state->coroutine = coroutine;
  state->stop = std::move(stop_);
  internal::SleepTask task(state);
  absl::StatusOr<Timeout> timeout =
      target_.schedule(target_.timer, task, when_);
  if (!timeout.ok()) {
    task.Release();
    delete state;
    status_ = timeout.status();
    return false;
  }
  state_ = state;
  // The task may run from here on, but resumes nothing before kSuspended.
  timeout_ = *std::move(timeout);
  // A stop requested since await_ready() runs the callback here, on this
  // thread: it moves the timeout to now, and the timer resumes us.
  if (state->stop.stop_possible()) on_stop_.emplace(state->stop, OnStop{this});
  TICKWHEEL_INTERLEAVE_POINT();
  // Past this RMW, `this` may be gone (the task resumed the coroutine).
  return !(state->bits.fetch_or(internal::SleepState::kSuspended,
                                std::memory_order_acq_rel) &
           internal::SleepState::kEnded);
}

absl::Status Awaitable::await_resume() {
  // Waits for a callback running on another thread, which reads timeout_.
  on_stop_.reset();
  timeout_ = Timeout();
  if (state_ == nullptr) return std::move(status_);  // never suspended
  // The task has ended the sleep (kEnded), and is done with the block.
  absl::Status status = std::move(state_->status);
  delete std::exchange(state_, nullptr);
  return status;
}

Awaitable::~Awaitable() {
  if (state_ == nullptr) return;  // never suspended, or resumed
  // The coroutine is being destroyed while suspended in the sleep. The stop
  // callback goes first (it reads timeout_), then the task is told, then the
  // timeout is cancelled: a cancel() that wins destroys the task inside,
  // which finds kAbandoned and frees the block.
  on_stop_.reset();
  internal::SleepState* state = std::exchange(state_, nullptr);
  TICKWHEEL_INTERLEAVE_POINT();
  if (state->bits.fetch_or(internal::SleepState::kAbandoned,
                           std::memory_order_acq_rel) &
      internal::SleepState::kEnded) {
    // The task ended the sleep and set out to resume a coroutine that is
    // being destroyed: only a destruction racing that resumption gets here
    // (the file comment says where to destroy). The block is ours to free.
    delete state;
  }
  // Past the RMW the block is the task's. This cancel() is the sleep's only
  // one: false when the task is running, has run, or waits in a
  // task_executor (it frees the block then), or the timer stopped.
  timeout_.cancel();
}

void Awaitable::OnStop::operator()() const noexcept {
  // Nothing when the task has run or is running, or the timer has stopped:
  // then the sleep ends that way.
  sleep->target_.expedite(sleep->target_.timer, sleep->timeout_);
}

}  // namespace tickwheel
