// tools/bench/asio_bench.h
// -----------------------------------------------------------------------------
// boost::asio::steady_timer on one io_context thread, used as an Asio user
// would: timers belong to the io thread, so producers only post to it.
// Schedule() reads the clock (so that the post's delay does not move the
// deadline) and posts the arming; Cancel() posts steady_timer::cancel() and
// returns true once posted, as only the io thread can tell. pending_ is kept
// on the io thread, so Pending() lags queued requests; Stop() first lets
// every posted request run. Wakeups() counts the io thread's voluntary
// context switches: it blocks in epoll_wait, and Asio offers no hook.

#ifndef TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_

#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

class AsioBench {
 public:
  static constexpr std::string_view kName = "asio";
  static constexpr bool kExactPending = false;
  struct State {  // one timeout; `timer` lives on the io thread only
    std::optional<boost::asio::steady_timer> timer;
    std::function<void()> task;
  };
  using Handle = std::shared_ptr<State>;

  // The promises are shared: the io thread may still be inside set_value()
  // when the waiting thread wakes and would destroy them.
  explicit AsioBench(const BenchTimerOptions&)
      : work_(boost::asio::make_work_guard(io_)) {
    auto started = std::make_shared<std::promise<void>>();
    std::future<void> ready = started->get_future();
    thread_ = std::thread([this, started] {
      io_tid_ = static_cast<int>(gettid());
      started->set_value();
      io_.run();
    });
    ready.wait();
  }
  ~AsioBench() { Stop(); }  // io_'s destructor destroys the waits left

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    auto state = std::make_shared<State>();
    state->task = std::forward<F>(f);
    const auto deadline = std::chrono::steady_clock::now() + delay;
    boost::asio::post(io_, [this, state, deadline] { Arm(state, deadline); });
    return state;
  }

  bool Cancel(const Handle& h) {
    boost::asio::post(io_, [this, h] {
      if (h->timer && h->timer->cancel() > 0) {
        AddPending(-1);
        h->task = nullptr;  // captures die at cancellation
      }
    });
    return true;
  }

  int64_t Pending() { return pending_.load(std::memory_order_relaxed); }
  int64_t Wakeups() { return ThreadVoluntarySwitches(io_tid_); }

  int64_t Stop() {
    if (thread_.joinable()) {
      // One io thread runs handlers in order: this one sees every request.
      auto count = std::make_shared<std::promise<int64_t>>();
      std::future<int64_t> pending = count->get_future();
      boost::asio::post(io_, [this, count] { count->set_value(Pending()); });
      unprocessed_ = pending.get();
      work_.reset();
      io_.stop();
      thread_.join();
    }
    return unprocessed_;
  }

 private:
  void Arm(const Handle& state,
           std::chrono::steady_clock::time_point deadline) {
    state->timer.emplace(io_, deadline);
    AddPending(1);
    state->timer->async_wait(
        [this, state](const boost::system::error_code& ec) {
          if (!ec) {
            AddPending(-1);
            state->task();
            state->task = nullptr;
          }
          state->timer.reset();  // on the io thread, where it belongs
        });
  }
  void AddPending(int64_t by) {  // single writer: the io thread
    pending_.store(pending_.load(std::memory_order_relaxed) + by,
                   std::memory_order_relaxed);
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_;
  std::thread thread_;
  int io_tid_ = 0;
  int64_t unprocessed_ = 0;
  std::atomic<int64_t> pending_{0};
};

static_assert(BenchTimer<AsioBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_
