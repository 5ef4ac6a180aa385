// timer/asio_local_timer.h
// -----------------------------------------------------------------------------
// AsioLocalTimer: a LocalTimer (timer/local_timer.h) driven by an Asio
// io_context on the io_context's own thread, with no thread of its own; and
// AsyncSleep() / AsyncSleepUntil() on it, which complete on the handler's
// executor without a thread hop. Header-only, for standalone Asio 1.19 or
// later. Bazel //timer:asio_local_timer, CMake tickwheel::asio.
//
// Example (one io_context, run by one thread; an Asio coroutine):
//
//   asio::io_context io(1);
//   auto wheel = tickwheel::AsioLocalTimer::Create(io.get_executor()).value();
//   asio::co_spawn(io, [&]() -> asio::awaitable<void> {
//     using namespace asio::experimental::awaitable_operators;
//     auto done = co_await (socket.async_read_some(buf, asio::use_awaitable) ||
//                           tickwheel::AsyncSleep(*wheel, 2s,
//                                                 asio::use_awaitable));
//     if (done.index() == 1) socket.close();   // the deadline came first
//   }, asio::detached);
//   io.run();
//
// How it is driven. The wheel holds every sleep and timeout; the io_context
// holds one asio::steady_timer for the whole wheel, armed for the wheel's
// nextWakeup(). When it fires, a handler on the executor calls advance(),
// which runs what is due (a sleep's completion is posted to its handler's
// executor from there, never run inside advance()), then arms the
// steady_timer again. A new sleep or timeout re-arms it only when it is due
// before the wake-up already planned (one compare otherwise). So N pending
// sleeps cost Asio's timer queue one entry, not N, and each costs the wheel
// O(1) to file and to cancel. The wake-up counts as work for run(), as any
// Asio wait does, while something is pending; a sleep cancelled through its
// slot drops it once nothing is (one post to the executor), so run()
// returns when the last operation is done, as with Asio's own timers.
//
// Threading: the io_context must be run by one thread (io_context(1), or
// one thread calling run()), which is the LocalTimer's owner thread
// (LocalTimerOptions::owner, or the first thread that uses it). AsyncSleep(),
// AsyncSleepUntil(), newTimeout(), newTimeoutAt(), newPeriodic() and
// replan() are for that thread (from a handler or a coroutine on the
// io_context); from another, AsyncSleep() completes with
// std::errc::operation_not_permitted (the LocalTimer's PermissionDenied) and
// the scheduling calls return PermissionDenied. Timeout::cancel() on a
// handle, pendingTimeouts(), metrics() and now() are for any thread, as on a
// LocalTimer. A strand of a multi-threaded io_context does not do: it runs
// on several threads in turn, and the LocalTimer refuses all but one.
//
// The handler of a sleep may have any executor (the same io_context, a
// strand, another context); one without (a plain callback) gets the
// driver's, as the operations of Asio's I/O objects do. Its completion is
// posted there, holds a work
// guard on it while pending, and is tied to that context's lifetime as on
// a Timer (timer/asio.h: "The execution context"). The error codes are
// timer/asio.h's, plus operation_not_permitted above; shut_down means the
// AsioLocalTimer (so its LocalTimer) was stopped or destroyed.
//
// Lifetime: destroy the AsioLocalTimer on the io_context's thread (or once
// its run() has returned), before the io_context, as any Asio I/O object;
// that ends the sleeps still pending with shut_down (posted) and destroys
// the timeouts' tasks unrun. Never destroy it from inside one of its
// timeouts' tasks (the LocalTimer aborts).

#ifndef TICKWHEEL_TIMER_ASIO_LOCAL_TIMER_H_
#define TICKWHEEL_TIMER_ASIO_LOCAL_TIMER_H_

#include <algorithm>
#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/bind_executor.hpp>
#include <asio/error.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel {

class AsioLocalTimer {
 public:
  using executor_type = asio::any_io_executor;

  // A LocalTimer made with `options`, driven on `executor` (an io_context's
  // executor, run by one thread). Errors: LocalTimer::Create()'s. Starts no
  // thread and arms nothing until something is scheduled.
  static absl::StatusOr<std::unique_ptr<AsioLocalTimer>> Create(
      executor_type executor, LocalTimerOptions options = {}) {
    absl::StatusOr<std::unique_ptr<LocalTimer>> timer =
        LocalTimer::Create(std::move(options));
    if (!timer.ok()) return timer.status();
    return std::unique_ptr<AsioLocalTimer>(
        new AsioLocalTimer(std::move(executor), *std::move(timer)));
  }

  // Stops the LocalTimer (pending sleeps complete with shut_down, posted;
  // other tasks are destroyed unrun) and cancels the wake-up. On the owner
  // thread, or once the io_context's run() has returned.
  ~AsioLocalTimer() {
    if (core_->timer->ownerThread() == std::thread::id() ||
        core_->timer->isOwnerThread()) {
      core_->timer->stop();
    }
    // Otherwise (run() has returned on the owner) ~LocalTimer destroys what
    // is left, as the destructor of a LocalTimer may on another thread.
  }

  AsioLocalTimer(const AsioLocalTimer&) = delete;
  AsioLocalTimer& operator=(const AsioLocalTimer&) = delete;

  executor_type get_executor() const noexcept {
    return core_->wake.get_executor();
  }

  // The LocalTimer: for its queries (pendingTimeouts(), metrics(), now()),
  // and for anything scheduled on it directly, after which call replan().
  // Do not call its advance(): the io_context does.
  LocalTimer& timer() noexcept { return *core_->timer; }

  // LocalTimer::newTimeout(), newTimeoutAt() and newPeriodic(), every form,
  // which also re-arm the wake-up when the new timeout is due first. The
  // task runs inside advance(), on the io_context's thread. Owner thread.
  template <typename... Args>
  absl::StatusOr<Timeout> newTimeout(Args&&... args) {
    return Replanned(core_->timer->newTimeout(std::forward<Args>(args)...));
  }
  template <typename... Args>
  absl::StatusOr<Timeout> newTimeoutAt(Args&&... args) {
    return Replanned(core_->timer->newTimeoutAt(std::forward<Args>(args)...));
  }
  template <typename... Args>
  absl::StatusOr<Timeout> newPeriodic(Args&&... args) {
    return Replanned(core_->timer->newPeriodic(std::forward<Args>(args)...));
  }

  // Re-arms the wake-up for the LocalTimer's nextWakeup(): after scheduling
  // on timer() directly, or after a Timeout::reset() to an earlier deadline
  // (neither of which the driver sees); and drops it when nothing is
  // pending, after Timeout::cancel() of the last timeout (a sleep's
  // cancellation does that by itself), so that run() may return. Owner
  // thread. Cost: nextWakeup(), and steady_timer::expires_after() when the
  // plan moved earlier.
  void replan() {
    core_->DropWakeUpIfIdle();
    Core::Replan(core_, std::nullopt);
  }

  // For AsyncSleep() and AsyncSleepUntil(): schedules the sleep `handler`
  // on the wheel, then re-arms when it is due first.
  template <typename Handler>
  void StartSleep(Handler&& handler,
                  std::optional<internal::DeadlineSpec> when) {
    const std::optional<TimePoint> deadline =
        internal::AsioSleep<std::decay_t<Handler>>::Start(
            *core_->timer, std::forward<Handler>(handler), when,
            /*post_expiry=*/true,
            internal::SleepCancelHook{&Core::OnSleepCancelled, core_.get()});
    if (deadline.has_value()) Core::Replan(core_, deadline);
  }

 private:
  // The state the wake-up's handler reaches through a weak_ptr: the
  // AsioLocalTimer may be destroyed with a completed wait still queued.
  // Touched only on the owner thread (the wait's handler runs there).
  struct Core {
    std::unique_ptr<LocalTimer> timer;
    asio::basic_waitable_timer<std::chrono::steady_clock,
                               asio::wait_traits<std::chrono::steady_clock>,
                               executor_type>
        wake;
    // The LocalTimer time the wake-up is armed for; nullopt: none armed.
    std::optional<TimePoint> armed;
    // Inside advance(): what tasks schedule is planned once it returns.
    bool in_advance = false;
    // An idle check is posted (OnSleepCancelled()); set by any thread that
    // cancels a sleep, cleared on the owner thread when the check runs.
    // acq_rel/release: the check that clears it reads the wheel afterwards,
    // and a cancel that finds it set relies on that later read.
    std::atomic<bool> idle_check_posted{false};
    std::weak_ptr<Core> self;

    Core(executor_type executor, std::unique_ptr<LocalTimer> t)
        : timer(std::move(t)), wake(std::move(executor)) {}

    // A wait armed for a wheel with nothing pending would keep run() from
    // returning until it fires (Asio counts the wait as work): dropped.
    void DropWakeUpIfIdle() {
      if (!armed.has_value() || timer->pendingTimeouts() != 0) return;
      armed.reset();
      wake.cancel();
    }

    // A sleep cancelled through its slot, on the cancelling thread: checks,
    // on the owner thread, whether the wheel went idle. One post at a time.
    static void OnSleepCancelled(void* context) {
      Core* c = static_cast<Core*>(context);
      if (c->idle_check_posted.exchange(true, std::memory_order_acq_rel)) {
        return;
      }
      asio::post(c->wake.get_executor(), [weak = c->self] {
        if (std::shared_ptr<Core> alive = weak.lock()) {
          alive->idle_check_posted.store(false, std::memory_order_release);
          alive->DropWakeUpIfIdle();
        }
      });
    }

    // Arms the wake-up for nextWakeup() unless one at or before `due` (a
    // new timeout's deadline; nullopt: unknown) is armed already. Waking
    // before a run time is harmless (advance() runs nothing then); waking
    // after the earliest one is what this prevents.
    static void Replan(const std::shared_ptr<Core>& core,
                       std::optional<TimePoint> due) {
      Core& c = *core;
      if (c.in_advance) return;
      if (due.has_value() && c.armed.has_value() && *c.armed <= *due) return;
      const std::optional<TimePoint> next = c.timer->nextWakeup();
      // Nothing pending: a wait still armed fires and finds nothing, which
      // costs less than cancelling it here.
      if (!next.has_value()) return;
      if (c.armed.has_value() && *c.armed <= *next) return;
      c.armed = next;
      const auto wait =
          std::max(std::chrono::nanoseconds::zero(),
                   std::chrono::nanoseconds(*next - c.timer->now()));
      // A wait pending is cancelled here: its handler gets operation_aborted
      // and does nothing.
      c.wake.expires_after(wait);
      c.wake.async_wait(
          [weak = std::weak_ptr<Core>(core)](const std::error_code& ec) {
            if (ec == asio::error::operation_aborted) return;
            if (std::shared_ptr<Core> alive = weak.lock()) OnWake(alive);
          });
    }

    static void OnWake(const std::shared_ptr<Core>& core) {
      core->armed.reset();
      core->in_advance = true;
      core->timer->advance();
      core->in_advance = false;
      Replan(core, std::nullopt);
    }
  };

  AsioLocalTimer(executor_type executor, std::unique_ptr<LocalTimer> timer)
      : core_(std::make_shared<Core>(std::move(executor), std::move(timer))) {
    core_->self = core_;
  }

  absl::StatusOr<Timeout> Replanned(absl::StatusOr<Timeout> timeout) {
    if (timeout.ok()) Core::Replan(core_, timeout->deadline());
    return timeout;
  }

  const std::shared_ptr<Core> core_;
};

namespace internal {

struct InitiateLocalAsioSleep {
  AsioLocalTimer* timer;
  template <typename Handler>
  void operator()(Handler&& handler, std::optional<DeadlineSpec> when) const {
    using H = std::decay_t<Handler>;
    if constexpr (std::is_same_v<asio::associated_executor_t<H>,
                                 asio::system_executor>) {
      // No executor of its own: the driver's, as an Asio I/O object's
      // operations default to the object's executor.
      timer->StartSleep(asio::bind_executor(timer->get_executor(),
                                            std::forward<Handler>(handler)),
                        when);
    } else {
      timer->StartSleep(std::forward<Handler>(handler), when);
    }
  }
};

}  // namespace internal

// Waits on `timer`'s wheel for `delay`, then completes with
// void(std::error_code) on the handler's executor, as AsyncSleep() on a
// Timer does (timer/asio.h: the delay's rounding, the tokens, per-operation
// cancellation of every type, `||`), but driven by the io_context's own
// thread (the file comment). Call it on that thread. Cost: one newTimeout()
// on the LocalTimer (O(1), no lock), one allocation from the handler's
// allocator, the context service's look-up and gate (timer/asio.h), one
// compare with the planned wake-up (or a re-arm when due first), and one
// post of the completion.
template <typename CompletionToken>
auto AsyncSleep(AsioLocalTimer& timer, absl::Duration delay,
                CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateLocalAsioSleep{&timer}, token,
      std::optional<internal::DeadlineSpec>(
          internal::DeadlineSpec{.nanos = internal::DelayNanos(delay)}));
}

// Any std::chrono::duration; a NaN count completes with invalid_argument.
template <typename Rep, typename Period, typename CompletionToken>
auto AsyncSleep(AsioLocalTimer& timer, std::chrono::duration<Rep, Period> delay,
                CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateLocalAsioSleep{&timer}, token,
      internal::AsioDelaySpec(delay));
}

// Until `deadline` on the LocalTimer's clock (timer().now()), as
// steady_timer's expires_at(); a deadline in the past completes at the next
// tick end. Otherwise as AsyncSleep().
template <typename CompletionToken>
auto AsyncSleepUntil(AsioLocalTimer& timer, TimePoint deadline,
                     CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateLocalAsioSleep{&timer}, token,
      std::optional<internal::DeadlineSpec>(internal::AbsoluteSpec(deadline)));
}

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_ASIO_LOCAL_TIMER_H_
