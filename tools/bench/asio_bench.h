// tools/bench/asio_bench.h
// -----------------------------------------------------------------------------
// AsioBench: boost::asio::steady_timer on one io_context thread, behind the
// benchmark's BenchTimer concept (bench_timer.h), used as a real Asio user
// would: timers belong to the io_context thread, so producers never touch one.
//
//   Schedule(f, delay): reads the clock (deadline = now + delay, so the post's
//     queueing delay does not push the deadline out), makes a shared State
//     holding the task, and posts to the io_context a handler that creates the
//     steady_timer, sets it to expire at the deadline and starts async_wait.
//   Cancel(h): posts a handler that calls steady_timer::cancel(). Asio can
//     only tell on the io thread whether that cancelled anything, so Cancel()
//     returns true once the request is posted.
//   The wait handler runs the task on success, then destroys the timer on the
//     io thread (so no State ever destroys a timer elsewhere).
//
// Counting: pending_, fired_ and cancelled_ are written by the io thread only.
// Pending() therefore counts what the io thread has armed and not resolved
// yet, and lags requests still queued in the io_context. Stop() first lets
// every posted request run, so its count is exact. Wakeups() is the io
// thread's voluntary context switches (/proc/self/task/<tid>/status): the
// thread blocks in epoll_wait, so every return from a sleep is one of them;
// Asio offers no hook inside io_context::run() to count them otherwise.
//
// Handles must be dropped before the AsioBench is destroyed (a State outliving
// its io_context would hold a dangling timer).
//
// This class is thread-safe.

#ifndef TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "tools/bench/bench_timer.h"

namespace tickwheel::bench {

class AsioBench {
 public:
  static constexpr std::string_view kName = "asio";
  static constexpr bool kExactPending = false;

  // One scheduled task. `timer` exists from the arming handler until the wait
  // handler has run; both only on the io thread.
  struct State {
    std::optional<boost::asio::steady_timer> timer;
    std::function<void()> task;
  };
  using Handle = std::shared_ptr<State>;

  explicit AsioBench(const BenchTimerOptions& options);
  ~AsioBench();
  AsioBench(const AsioBench&) = delete;
  AsioBench& operator=(const AsioBench&) = delete;

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    auto state = std::make_shared<State>();
    state->task = std::forward<F>(f);
    const auto deadline = std::chrono::steady_clock::now() + delay;
    boost::asio::post(io_, [this, state, deadline] { Arm(state, deadline); });
    return state;
  }

  // Posts the cancellation; true once posted (see the file comment).
  bool Cancel(const Handle& h);
  int64_t Pending() { return pending_.load(std::memory_order_relaxed); }
  int64_t Stop();
  int64_t Wakeups();
  CounterMap Counters();

 private:
  void Arm(const Handle& state, std::chrono::steady_clock::time_point deadline);
  // Single writer (the io thread): a load and a store.
  static void Add(std::atomic<int64_t>& c, int64_t by) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_;
  std::thread thread_;
  std::atomic<int> io_tid_{0};
  bool stopped_ = false;      // Stop() is called from one thread at a time
  int64_t unprocessed_ = 0;   // what the first Stop() saw

  std::atomic<int64_t> pending_{0};
  std::atomic<int64_t> fired_{0};
  std::atomic<int64_t> cancelled_{0};
};

static_assert(BenchTimer<AsioBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_ASIO_BENCH_H_
