// examples/asio_local_timer.cc
// -----------------------------------------------------------------------------
// Sleeps on a wheel that the io_context drives itself, on its own thread,
// no timer thread (tickwheel/timer/asio_local_timer.h), in an Asio
// coroutine (asio::awaitable): the five-line form,
//
//   asio::io_context io(1);
//   auto wheel = tickwheel::AsioLocalTimer::Create(io.get_executor()).value();
//   asio::co_spawn(io, [&]() -> asio::awaitable<void> {
//     co_await tickwheel::AsyncSleep(*wheel, 10ms, asio::use_awaitable);
//   }, asio::detached);
//   io.run();
//
// then a thousand coroutines, each racing a request (a post that comes at
// once) against a 30 s deadline with `||`, as a server does per request:
// Asio's timer queue holds one entry for all of them (the wheel's wake-up),
// and every deadline is cancelled on the io thread the moment its request
// wins. A last coroutine waits for a reading of the wheel's clock with
// AsyncSleepUntil(), as steady_timer::expires_at() does.
//
// Exits 0 when every check passes.

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "tickwheel/timer/asio_local_timer.h"

using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += ok ? 0 : 1;
}

}  // namespace

int main() {
  asio::io_context io(1);
  auto wheel = tickwheel::AsioLocalTimer::Create(io.get_executor()).value();
  const std::thread::id io_thread = std::this_thread::get_id();

  bool slept_on_io_thread = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await tickwheel::AsyncSleep(*wheel, 10ms, asio::use_awaitable);
        slept_on_io_thread = std::this_thread::get_id() == io_thread;
      },
      asio::detached);

  constexpr int kRequests = 1000;
  int replies_first = 0;
  for (int i = 0; i < kRequests; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto executor = co_await asio::this_coro::executor;
          auto first = co_await (
              tickwheel::AsyncSleep(*wheel, 30s, asio::use_awaitable) ||
              asio::post(executor, asio::use_awaitable));
          replies_first += first.index() == 1;
        },
        asio::detached);
  }

  bool until_not_early = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const tickwheel::TimePoint at = wheel->timer().now() + 20ms;
        co_await tickwheel::AsyncSleepUntil(*wheel, at, asio::use_awaitable);
        until_not_early = wheel->timer().now() >= at;
      },
      asio::detached);

  io.run();  // returns once every coroutine is done: no thread to join
  Check(slept_on_io_thread, "the sleep resumed on the io_context's thread");
  Check(replies_first == kRequests, "every request beat its deadline");
  Check(until_not_early, "AsyncSleepUntil() came at its deadline, not before");
  Check(wheel->timer().pendingTimeouts() == 0, "no deadline is left pending");
  return failures == 0 ? 0 : 1;
}
