// coro_deadline (coro_deadline.h): N requests, each `deadline || reply` in
// one Asio coroutine, with AsyncSleep() (on a Timer, or on an
// AsioLocalTimer driven by the same io_context) or with asio::steady_timer.

#include "tools/bench/workloads/coro_deadline.h"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>

#include <fmt/format.h>

#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/asio_local_timer.h"
#include "tickwheel/timer/timer.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {
namespace {

using asio::awaitable;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

constexpr auto kDeadline = std::chrono::seconds(30);

// The reply: it always beats the deadline.
awaitable<void> Reply() {
  co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
}

// Serves `n` requests; counts those whose reply came first. `Wheel` is a
// Timer or an AsioLocalTimer.
template <typename Wheel>
awaitable<void> ServeWithAsyncSleep(Wheel& timer, int64_t n, int64_t& replied) {
  for (int64_t i = 0; i < n; ++i) {
    auto first =
        co_await (AsyncSleep(timer, kDeadline, use_awaitable) || Reply());
    replied += first.index() == 1;
  }
}

awaitable<void> ServeWithSteadyTimer(int64_t n, int64_t& replied) {
  for (int64_t i = 0; i < n; ++i) {
    asio::steady_timer deadline(co_await asio::this_coro::executor, kDeadline);
    auto first = co_await (deadline.async_wait(use_awaitable) || Reply());
    replied += first.index() == 1;
  }
}

// Runs `serve` (n requests, counted in `replied`) on `io` on this thread,
// timed.
RepOutput Timed(asio::io_context& io, int64_t n, awaitable<void> serve,
                const int64_t& replied) {
  RepOutput out;
  std::exception_ptr failed;
  asio::co_spawn(io, std::move(serve),
                 [&](std::exception_ptr e) { failed = std::move(e); });
  const int64_t t0 = NowNanos(), cpu0 = ThreadCpuNanos();
  io.run();
  const int64_t wall = NowNanos() - t0, cpu = ThreadCpuNanos() - cpu0;
  if (failed) out.failures.push_back("the coroutine threw");
  if (replied != n) {
    out.failures.push_back(fmt::format(
        "{} of {} requests saw the deadline first", n - replied, n));
  }
  out.values["ns_per_request"] = static_cast<double>(wall) / n;
  out.values["cpu_per_request"] = static_cast<double>(cpu) / n;
  return out;
}

// Runs `serve` (n requests) on a fresh io_context on this thread, timed.
// Each run first serves a warm-up of its own (--warmup requests), whose
// results are dropped.
template <typename Serve>
RepOutput Measure(int64_t n, Serve serve) {
  asio::io_context io(1);
  int64_t replied = 0;
  return Timed(io, n, serve(replied), replied);
}

// n requests on an AsioLocalTimer of a fresh io_context; checks that no
// deadline is left pending on its wheel.
RepOutput MeasureLocal(int64_t n) {
  asio::io_context io(1);
  std::unique_ptr<AsioLocalTimer> wheel =
      AsioLocalTimer::Create(io.get_executor()).value();
  int64_t replied = 0;
  RepOutput out =
      Timed(io, n, ServeWithAsyncSleep(*wheel, n, replied), replied);
  if (wheel->timer().pendingTimeouts() != 0) {
    out.failures.push_back(fmt::format("{} deadlines left pending",
                                       wheel->timer().pendingTimeouts()));
  }
  return out;
}

RepOutput RunSteadyTimer(const BenchConfig& c) {
  auto serve = [](int64_t n) {
    return [n](int64_t& replied) { return ServeWithSteadyTimer(n, replied); };
  };
  Measure(std::min(c.warmup, c.coro_requests),
          serve(std::min(c.warmup, c.coro_requests)));
  return Measure(c.coro_requests, serve(c.coro_requests));
}

}  // namespace

RepOutput CoroDeadline::RunTickwheel(const BenchConfig& c, int64_t, uint64_t) {
  std::unique_ptr<Timer> timer = Timer::Create().value();
  auto serve = [&](int64_t n) {
    return [&timer, n](int64_t& replied) {
      return ServeWithAsyncSleep(*timer, n, replied);
    };
  };
  Measure(std::min(c.warmup, c.coro_requests),
          serve(std::min(c.warmup, c.coro_requests)));
  RepOutput out = Measure(c.coro_requests, serve(c.coro_requests));
  if (timer->pendingTimeouts() != 0) {
    out.failures.push_back(
        fmt::format("{} deadlines left pending", timer->pendingTimeouts()));
  }
  return out;
}

RepOutput CoroDeadline::RunAsio(const BenchConfig& c, int64_t, uint64_t) {
  return RunSteadyTimer(c);
}

RepOutput CoroDeadlineLocal::RunTickwheel(const BenchConfig& c, int64_t,
                                          uint64_t) {
  MeasureLocal(std::min(c.warmup, c.coro_requests));
  return MeasureLocal(c.coro_requests);
}

RepOutput CoroDeadlineLocal::RunAsio(const BenchConfig& c, int64_t, uint64_t) {
  return RunSteadyTimer(c);
}

}  // namespace tickwheel::bench
