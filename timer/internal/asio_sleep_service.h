// timer/internal/asio_sleep_service.h
// -----------------------------------------------------------------------------
// Internal, for timer/asio.h: what ties the sleeps of AsyncSleep() to the
// lifetime of the execution context their handlers complete on (an
// io_context, a thread_pool, the system context), as Asio's own timers are
// tied to theirs.
//
// A sleep's timeout lives in a tickwheel Timer, which knows nothing of Asio;
// its handler, the work guard and the completion's destination live in an
// execution context that the application may destroy at any time, also while
// the sleep is pending or while the timer's worker is handing the completion
// over. SleepGate is the one place where the two meet:
//
//   * Each pending sleep is registered in its context's gate. When the
//     context shuts down (~io_context), SleepService::shutdown() closes the
//     gate and detaches every sleep still registered: its handler and work
//     guard are destroyed there, uncalled (what Asio does to its own pending
//     operations at shutdown), and its timeout is cancelled. A detached
//     sleep's task, when it ends later, touches nothing of the context.
//   * A sleep that ends enters the gate to hand its completion to the
//     executor; the context cannot finish shutting down while a hand-over is
//     in flight (shutdown() waits for it), and a sleep that finds the gate
//     closed has been detached. The work guard is released inside the gate,
//     after the hand-over returned, so the context is alive for both.
//
// The gate outlives the service: each registered sleep holds it, since a
// detached sleep's task may end after the context is gone.
//
// Ground rules: registration, detachment, entry and the in-flight count are
// under the gate's mutex; nothing is called under it (no handler, no
// executor, no cancel()). What a detached sleep's block needs beyond that
// (who frees it) is the sleep's own atomic handshake (timer/asio.h).
//
// Thread-safety: thread-safe.

#ifndef TICKWHEEL_TIMER_INTERNAL_ASIO_SLEEP_SERVICE_H_
#define TICKWHEEL_TIMER_INTERNAL_ASIO_SLEEP_SERVICE_H_

#include <asio/execution.hpp>
#include <asio/execution_context.hpp>
#include <asio/query.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tickwheel::internal {

// A sleep as its gate sees it: a link in the list of registered sleeps, and
// how to detach it.
struct GatedSleep {
  GatedSleep* prev = nullptr;
  GatedSleep* next = nullptr;
  // Called by shutdown() once, outside the gate's mutex, for a sleep it
  // detached: destroys the handler and the work guard, cancels the timeout.
  void (*detach)(GatedSleep* sleep) = nullptr;
};

class SleepGate {
 public:
  SleepGate() = default;
  SleepGate(const SleepGate&) = delete;
  SleepGate& operator=(const SleepGate&) = delete;

  // Registers `sleep`; false when the context is shutting down (the gate is
  // closed), and then nothing may be handed to it.
  bool Register(GatedSleep* sleep) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return false;
    sleep->prev = nullptr;
    sleep->next = head_;
    if (head_ != nullptr) head_->prev = sleep;
    head_ = sleep;
    return true;
  }

  // For a sleep that has ended: true when it was still registered, and
  // then it is unregistered and counted in flight until Leave(): the
  // context lives until then. False when shutdown() detached it.
  bool Enter(GatedSleep* sleep) {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleep->detach == nullptr) return false;  // detached
    Unlink(sleep);
    ++in_flight_;
    return true;
  }
  // The hand-over that Enter() admitted is done.
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--in_flight_ == 0 && !open_) done_.notify_all();
  }

  // Closes the gate, waits for the hand-overs in flight, and detaches each
  // sleep still registered (see the file comment). Once.
  void Close() {
    std::vector<std::pair<GatedSleep*, void (*)(GatedSleep*)>> detached;
    {
      std::unique_lock<std::mutex> lock(mu_);
      open_ = false;
      done_.wait(lock, [&] { return in_flight_ == 0; });
      // Enter() reads `detach` under the mutex: a detached sleep's task
      // that ends from here on finds it null.
      for (GatedSleep* s = head_; s != nullptr; s = s->next) {
        detached.emplace_back(s, std::exchange(s->detach, nullptr));
      }
      head_ = nullptr;
    }
    // Outside the mutex: a cancel() that wins ends the task, which enters
    // the gate.
    for (const auto& [sleep, detach] : detached) detach(sleep);
  }

 private:
  void Unlink(GatedSleep* sleep) {
    if (sleep->prev != nullptr) {
      sleep->prev->next = sleep->next;
    } else {
      head_ = sleep->next;
    }
    if (sleep->next != nullptr) sleep->next->prev = sleep->prev;
    sleep->prev = sleep->next = nullptr;
  }

  std::mutex mu_;
  std::condition_variable done_;
  bool open_ = true;
  int in_flight_ = 0;
  GatedSleep* head_ = nullptr;  // the registered sleeps
};

// The execution context's service: one gate per context, closed when the
// context shuts down (before the context's scheduler, which was there
// first: services shut down in the reverse order of their creation).
class SleepService : public asio::execution_context::service {
 public:
  inline static asio::execution_context::id id;

  explicit SleepService(asio::execution_context& context)
      : asio::execution_context::service(context),
        gate_(std::make_shared<SleepGate>()) {}

  const std::shared_ptr<SleepGate>& gate() const { return gate_; }

 private:
  void shutdown() override { gate_->Close(); }

  std::shared_ptr<SleepGate> gate_;
};

// The gate of the execution context `executor` submits to: the standard
// executors' context property (an io_context's, a strand's, a thread
// pool's, the system context's), or a Networking TS executor's context().
// Null for an executor that names no context (use_future's, which
// completes the promise where it is called): nothing to outlive. Cost:
// Asio's service registry, one mutex and a walk of the context's services.
template <typename Executor>
std::shared_ptr<SleepGate> GateOf(const Executor& executor) {
  if constexpr (asio::can_query<const Executor&,
                                asio::execution::context_t>::value) {
    asio::execution_context& context =
        asio::query(executor, asio::execution::context);
    return asio::use_service<SleepService>(context).gate();
  } else if constexpr (requires { executor.context(); }) {
    asio::execution_context& context = executor.context();
    return asio::use_service<SleepService>(context).gate();
  } else {
    return nullptr;
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_ASIO_SLEEP_SERVICE_H_
