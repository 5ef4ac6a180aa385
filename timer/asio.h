// timer/asio.h
// -----------------------------------------------------------------------------
// An Asio asynchronous operation on a Timer: AsyncSleep(timer, delay, token)
// completes with void(std::error_code) when `delay` has passed,
// AsyncSleepUntil(timer, deadline, token) when `deadline` has come (Asio's
// steady_timer expires_after() and expires_at()). On a LocalTimer driven by
// the io_context itself, no thread of its own: timer/asio_local_timer.h. For
// standalone Asio 1.19 or later (per-operation cancellation); header-only,
// it adds no compiled code to tickwheel and links nothing of Asio's.
// Bazel //timer:asio, CMake tickwheel::asio.
//
// Example (an Asio coroutine, with a per-request deadline):
//
//   using namespace asio::experimental::awaitable_operators;
//   auto done = co_await (socket.async_read_some(buf, asio::use_awaitable) ||
//                         tickwheel::AsyncSleep(timer, 2s,
//                         asio::use_awaitable));
//   if (done.index() == 1) socket.close();   // the deadline came first
//
// The error code:
//   {}                              the time came.
//   asio::error::operation_aborted  cancelled through the handler's
//                                   cancellation slot, of any type (terminal,
//                                   partial or total): the timeout is
//                                   cancelled at once (pendingTimeouts()
//                                   drops before emit() returns).
//   asio::error::shut_down          the Timer was stopped (stop() or ~Timer)
//                                   before the time came, or was stopped at
//                                   the call; or a task_executor destroyed
//                                   the sleep's task without running it.
//   asio::error::try_again          max_pending_timeouts is reached.
//   asio::error::invalid_argument   a std::chrono delay with a NaN count.
//
// Where the handler runs: on its associated executor (asio::bind_executor,
// a coroutine's own executor with use_awaitable), never inside
// AsyncSleep() nor inside the cancellation slot's emit(). When the time
// comes it is dispatched from where the timer's tasks run (the worker
// thread, or TimerOptions::task_executor): a handler whose executor is the
// default system_executor (a plain callback, use_future) runs right there,
// so it must be short and must not throw. A stop() dispatches likewise from
// the thread that stops the timer.
//
// While it is pending the operation holds a work guard on the handler's
// executor (an io_context's run() does not return for lack of work) and one
// library timeout (timer/internal/library_timeouts.h): it counts in
// pendingTimeouts() and against max_pending_timeouts, cancelAll() passes it
// by, and stop() completes it with shut_down instead of returning it.
// Its state is one block from the handler's associated allocator, freed
// before the handler is called; the timeout's task is a pointer to it,
// stored inside the timeout.
//
// The execution context. A sleep is tied to the context its handler's
// executor names (an io_context, through a strand too; a thread_pool; the
// system context), as Asio's own timers are: destroying that context while
// the sleep is pending destroys the handler uncalled, as Asio destroys its
// own pending operations, and cancels the sleep's timeout (pendingTimeouts()
// drops as the context's destructor returns); nothing touches the context
// afterwards, also when the timer had already claimed the sleep. A context
// may be destroyed as soon as its run() returns. A sleep started while its
// context shuts down (from a handler's destructor) is destroyed uncalled.
// (timer/internal/asio_sleep_service.h: one service per context.)
//
// Thread-safety: AsyncSleep() may be called from any thread. As with Asio's
// own operations, the cancellation slot's emit() must not race the
// handler's executor (emit from that executor, or its strand).

#ifndef TICKWHEEL_TIMER_ASIO_H_
#define TICKWHEEL_TIMER_ASIO_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/version.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/interleave.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/asio_sleep_service.h"
#include "tickwheel/timer/internal/library_timeouts.h"
#include "tickwheel/timer/timer.h"

#if ASIO_VERSION < 101900
#error "tickwheel/timer/asio.h needs standalone Asio 1.19 or later"
#endif

namespace tickwheel {
namespace internal {

// The error code for a sleep that could not be scheduled.
inline std::error_code AsioErrorOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return asio::error::shut_down;
    case absl::StatusCode::kInvalidArgument:
      return asio::error::invalid_argument;
    case absl::StatusCode::kPermissionDenied:  // a LocalTimer's wrong thread
      return std::make_error_code(std::errc::operation_not_permitted);
    default:  // ResourceExhausted: the limit, or no memory
      return asio::error::try_again;
  }
}

// Told when a sleep's timeout was cancelled through its slot, on the
// cancelling thread, after the sleep's completion was posted: the
// AsioLocalTimer's way to drop a wake-up nothing needs any more.
struct SleepCancelHook {
  void (*fn)(void* context) = nullptr;
  void* context = nullptr;
};

// One pending AsyncSleep(): the handler, its work guard, the timeout.
//
// Ground rules. Four parties touch it: the initiating thread (Start()), the
// timeout's task (run by the timer, or destroyed unrun by stop() or by the
// cancellation handler's cancel()), the handler's executor (the
// cancellation handler, then the Completion, which frees it), and the
// execution context's shutdown (timer/internal/asio_sleep_service.h), which
// may detach it. The task ends the operation exactly once, as the timer
// runs or destroys a task exactly once. Start() and the task each set a bit
// of state_ with one acq_rel fetch_or (kArmed, kEnded); whichever comes
// second delivers: it enters the context's gate, hands the Completion to
// the executor and releases the work guard there, so that the context is
// alive for both. The cancellation handler and the Completion both run on
// the executor, and the Completion disconnects the slot before it frees the
// block. A sleep the shutdown detached has lost its handler and work guard
// to it; the task that ends it finds the gate shut to it, and the block goes
// to whichever of the two sets its bit second (kLetGo, kDetached).
template <typename Handler>
class AsioSleep : private GatedSleep {
 public:
  using Executor = asio::associated_executor_t<Handler>;
  using HandlerAllocator = asio::associated_allocator_t<Handler>;
  using Allocator = typename std::allocator_traits<
      HandlerAllocator>::template rebind_alloc<AsioSleep>;
  using Slot = asio::associated_cancellation_slot_t<Handler>;

  // The initiation: completes through the executor whatever happens, but
  // for an executor whose context is shutting down (the handler is
  // destroyed uncalled then, as Asio's own operations are).
  // `TimerT` is Timer, or LocalTimer (timer/asio_local_timer.h), whose
  // expiries are posted (`post_expiry`): they come inside its advance().
  // Returns the deadline of the timeout it scheduled; nullopt when none.
  template <typename TimerT>
  static std::optional<TimePoint> Start(TimerT& timer, Handler handler,
                                        std::optional<DeadlineSpec> when,
                                        bool post_expiry = false,
                                        SleepCancelHook on_cancel = {}) {
    AsioSleep* op = Make(std::move(handler));
    if (op->gate_ != nullptr && !op->gate_->Register(op)) {
      Free(op);
      return std::nullopt;
    }
    if (!when.has_value()) {
      op->ec_ = asio::error::invalid_argument;
      op->Deliver(/*dispatch=*/false);
      return std::nullopt;
    }
    op->post_expiry_ = post_expiry;
    op->on_cancel_ = on_cancel;
    Task task(op);
    absl::StatusOr<Timeout> timeout =
        LibraryTimeouts::Schedule(timer, std::move(task), *when);
    if (!timeout.ok()) {
      task.Release();
      op->ec_ = AsioErrorOf(timeout.status());
      op->Deliver(/*dispatch=*/false);
      return std::nullopt;
    }
    op->timeout_ = *std::move(timeout);
    const TimePoint deadline = op->timeout_.deadline();
    Slot slot = asio::get_associated_cancellation_slot(*op->handler_);
    if (slot.is_connected()) {
      op->slot_ = slot;
      slot.template emplace<OnCancel>(op);
    }
    // Past this RMW the block is the task's and the executor's.
    if (op->state_.fetch_or(kArmed, std::memory_order_acq_rel) & kEnded) {
      op->Deliver(/*dispatch=*/false);  // inside the initiation: post
    }
    return deadline;
  }

 private:
  static constexpr uint32_t kArmed = 1;
  static constexpr uint32_t kEnded = 2;
  static constexpr uint32_t kCancelRequested = 4;
  static constexpr uint32_t kLetGo = 8;      // the task found it detached
  static constexpr uint32_t kDetached = 16;  // the shutdown is done with it

  // The timeout's task: one pointer, moved without throwing, so stored
  // inside the timeout. Run: the time came. Destroyed unrun: cancelled
  // through the slot, or the timer stopped, or the context shut down.
  class Task {
   public:
    explicit Task(AsioSleep* op) : op_(op) {}
    Task(Task&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
    Task& operator=(Task&&) = delete;
    ~Task() {
      if (op_ == nullptr) return;
      AsioSleep* op = std::exchange(op_, nullptr);
      if (op->state_.load(std::memory_order_acquire) & kCancelRequested) {
        // Inside the cancellation handler's cancel(): post, never inline.
        // The hook is copied first: End() may free the block.
        const SleepCancelHook hook = op->on_cancel_;
        op->End(asio::error::operation_aborted, /*dispatch=*/false);
        if (hook.fn != nullptr) hook.fn(hook.context);
      } else {
        op->End(asio::error::shut_down, /*dispatch=*/!op->post_expiry_);
      }
    }
    void operator()() {
      AsioSleep* op = std::exchange(op_, nullptr);
      op->End(std::error_code(), /*dispatch=*/!op->post_expiry_);
    }
    // Forgets the operation, for a task that was never scheduled.
    void Release() { op_ = nullptr; }

   private:
    AsioSleep* op_;
  };

  // The cancellation slot's handler, on the handler's executor.
  struct OnCancel {
    AsioSleep* op;
    void operator()(asio::cancellation_type_t type) const {
      constexpr asio::cancellation_type_t kHonoured =
          asio::cancellation_type::terminal | asio::cancellation_type::partial |
          asio::cancellation_type::total;
      if ((type & kHonoured) == asio::cancellation_type::none) return;
      op->state_.fetch_or(kCancelRequested, std::memory_order_acq_rel);
      // True: the task was destroyed inside, and posted operation_aborted.
      // False: it has run or the timer stopped, and that completion is on
      // its way.
      op->timeout_.cancel();
    }
  };

  // Calls the handler on its executor; destroyed uncalled (an executor
  // that shuts down), it frees the operation without calling it.
  class Completion {
   public:
    using allocator_type = HandlerAllocator;
    explicit Completion(AsioSleep* op) : op_(op), alloc_(op->alloc_) {}
    Completion(Completion&& other) noexcept
        : op_(std::exchange(other.op_, nullptr)), alloc_(other.alloc_) {}
    Completion& operator=(Completion&&) = delete;
    ~Completion() {
      if (op_ == nullptr) return;
      op_->Disconnect();
      Free(std::exchange(op_, nullptr));
    }
    allocator_type get_allocator() const noexcept { return alloc_; }

    void operator()() {
      AsioSleep* op = std::exchange(op_, nullptr);
      op->Disconnect();
      Handler handler = std::move(*op->handler_);
      const std::error_code ec = op->ec_;
      // Asio's rule: the block goes back before the upcall, so that the
      // handler may start the next operation in it.
      Free(op);
      std::move(handler)(ec);
    }

   private:
    AsioSleep* op_;
    HandlerAllocator alloc_;
  };

  explicit AsioSleep(Handler&& handler)
      : handler_(std::move(handler)),
        work_(asio::make_work_guard(asio::get_associated_executor(*handler_))),
        alloc_(asio::get_associated_allocator(*handler_)),
        gate_(GateOf(work_->get_executor())) {
    detach = &Detach;
  }

  static AsioSleep* Make(Handler&& handler) {
    Allocator alloc(asio::get_associated_allocator(handler));
    AsioSleep* op = std::allocator_traits<Allocator>::allocate(alloc, 1);
    try {
      return new (op) AsioSleep(std::move(handler));
    } catch (...) {
      std::allocator_traits<Allocator>::deallocate(alloc, op, 1);
      throw;
    }
  }

  static void Free(AsioSleep* op) {
    Allocator alloc(op->alloc_);
    op->~AsioSleep();
    std::allocator_traits<Allocator>::deallocate(alloc, op, 1);
  }

  // Called once, by the task: records `ec` and delivers, unless Start() is
  // still arming (it delivers then).
  void End(std::error_code ec, bool dispatch) {
    ec_ = ec;
    if (state_.fetch_or(kEnded, std::memory_order_acq_rel) & kArmed) {
      Deliver(dispatch);
    }
  }

  // Hands the Completion to the handler's executor through the context's
  // gate, then releases the work guard: both while the context cannot
  // finish shutting down. The block may be gone when this returns.
  void Deliver(bool dispatch) {
    const std::shared_ptr<SleepGate> gate = std::move(gate_);
    if (gate != nullptr && !gate->Enter(this)) {
      // Detached by the context's shutdown, which took the handler.
      TICKWHEEL_INTERLEAVE_POINT();
      if (state_.fetch_or(kLetGo, std::memory_order_acq_rel) & kDetached) {
        Free(this);
      }
      return;
    }
    Executor executor = work_->get_executor();
    asio::executor_work_guard<Executor> work = std::move(*work_);
    work_.reset();
    TICKWHEEL_INTERLEAVE_POINT();
    if (dispatch) {
      asio::dispatch(executor, Completion(this));
    } else {
      asio::post(executor, Completion(this));
    }
    work.reset();
    if (gate != nullptr) gate->Leave();
  }

  // The context's shutdown, once, for a sleep still registered: the
  // handler and the work guard go while the context still stands, and the
  // timeout is cancelled (a cancel() that wins ends the task inside, which
  // finds the gate shut to it).
  static void Detach(GatedSleep* sleep) {
    AsioSleep* op = static_cast<AsioSleep*>(sleep);
    op->Disconnect();
    op->handler_.reset();
    op->work_.reset();
    op->timeout_.cancel();
    TICKWHEEL_INTERLEAVE_POINT();
    if (op->state_.fetch_or(kDetached, std::memory_order_acq_rel) & kLetGo) {
      Free(op);
    }
  }

  void Disconnect() {
    if (slot_.is_connected()) slot_.clear();
  }

  std::optional<Handler> handler_;
  std::optional<asio::executor_work_guard<Executor>> work_;
  HandlerAllocator alloc_;
  // The context's gate, until Deliver(); null for an executor that names
  // no context.
  std::shared_ptr<SleepGate> gate_;
  Timeout timeout_;
  Slot slot_;
  std::error_code ec_;
  // Set before the timeout exists: the expiry posts instead of dispatching.
  bool post_expiry_ = false;
  SleepCancelHook on_cancel_;
  std::atomic<uint32_t> state_{0};
};

struct InitiateAsioSleep {
  Timer* timer;
  template <typename Handler>
  void operator()(Handler&& handler, std::optional<DeadlineSpec> when) const {
    AsioSleep<std::decay_t<Handler>>::Start(
        *timer, std::forward<Handler>(handler), when);
  }
};

// A std::chrono delay as a DeadlineSpec; nullopt for a NaN count.
template <typename Rep, typename Period>
std::optional<DeadlineSpec> AsioDelaySpec(
    std::chrono::duration<Rep, Period> delay) {
  if (const std::optional<absl::Duration> d = FromChrono(delay)) {
    return DeadlineSpec{.nanos = DelayNanos(*d)};
  }
  return std::nullopt;
}

}  // namespace internal

// Waits on `timer` for `delay` (negative counts as zero, rounded up to whole
// nanoseconds, huge delays saturate as in newTimeout()), then completes with
// void(std::error_code) as the file comment says. `token` is any Asio
// completion token: a callback, asio::use_awaitable, asio::use_future,
// asio::deferred, a handler bound to an executor or a cancellation slot.
// Cost: one newTimeout() with a small task, one allocation from the
// handler's allocator, the look-up of the context's service (Asio's service
// registry: one mutex), three short critical sections of its gate, and one
// dispatch or post to its executor.
template <typename CompletionToken>
auto AsyncSleep(Timer& timer, absl::Duration delay, CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateAsioSleep{&timer}, token,
      std::optional<internal::DeadlineSpec>(
          internal::DeadlineSpec{.nanos = internal::DelayNanos(delay)}));
}

// Any std::chrono::duration, converted as newTimeout() converts it
// (base/nanos.h); a NaN count completes with invalid_argument.
template <typename Rep, typename Period, typename CompletionToken>
auto AsyncSleep(Timer& timer, std::chrono::duration<Rep, Period> delay,
                CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateAsioSleep{&timer}, token,
      internal::AsioDelaySpec(delay));
}

// Waits on `timer` until `deadline`, a point on the timer's clock (its
// now(), std::chrono::steady_clock by default), as steady_timer's
// expires_at(); a deadline in the past completes at the next tick end, as
// newTimeoutAt() runs it. A steady_clock time_point in a coarser unit
// converts as it is passed. Completion, errors, cancellation and cost as
// AsyncSleep().
template <typename CompletionToken>
auto AsyncSleepUntil(Timer& timer, TimePoint deadline,
                     CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(std::error_code)>(
      internal::InitiateAsioSleep{&timer}, token,
      std::optional<internal::DeadlineSpec>(internal::AbsoluteSpec(deadline)));
}

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_ASIO_H_
