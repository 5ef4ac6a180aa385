// examples/asio_deadline_server.cc
// -----------------------------------------------------------------------------
// An Asio coroutine server on 127.0.0.1 whose deadlines come from a
// tickwheel Timer, through AsyncSleep() (tickwheel/timer/asio.h) and Asio's
// `||` (asio::experimental::awaitable_operators): whichever of the work and
// the deadline finishes first wins, and Asio cancels the other, which for
// AsyncSleep() takes its timeout off the timer at once.
//
// The protocol is a line per request, "work <ms> <deadline ms>": the
// server's backend takes <ms> milliseconds (an asio::steady_timer), and the
// reply is "done <ms>", or "deadline exceeded" when <deadline ms> comes
// first. A connection that sends no request for 500 ms is closed.
//
// A client in the same program asks for 10 ms of work with a 2 s deadline
// (done), then for a minute of work with a 300 ms deadline (deadline
// exceeded), then stays silent until the server closes the connection.
// Bounds are generous: only the order of events is checked, never a
// duration. Exits 0 when every check passes.

#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include "absl/time/time.h"
#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/timer.h"

namespace {

using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr absl::Duration kIdle = absl::Milliseconds(500);

// The backend: `ms` milliseconds of work.
awaitable<std::string> Work(int ms) {
  asio::steady_timer busy(co_await asio::this_coro::executor,
                          std::chrono::milliseconds(ms));
  co_await busy.async_wait(use_awaitable);
  co_return "done " + std::to_string(ms);
}

// The reply to "work <ms> <deadline ms>", within the deadline.
awaitable<std::string> Answer(tickwheel::Timer& timer,
                              const std::string& request) {
  std::istringstream in(request);
  std::string verb;
  int ms = 0, deadline_ms = 0;
  if (!(in >> verb >> ms >> deadline_ms) || verb != "work") {
    co_return "bad request";
  }
  std::variant<std::string, std::monostate> first = co_await (
      Work(ms) || tickwheel::AsyncSleep(timer, absl::Milliseconds(deadline_ms),
                                        use_awaitable));
  if (first.index() == 0) co_return std::get<0>(first);
  co_return "deadline exceeded";
}

// One connection: requests one at a time, closed after kIdle of silence.
awaitable<void> Session(tcp::socket socket, tickwheel::Timer& timer) {
  std::string buffer;
  try {
    while (true) {
      std::variant<size_t, std::monostate> read =
          co_await (asio::async_read_until(socket, asio::dynamic_buffer(buffer),
                                           '\n', use_awaitable) ||
                    tickwheel::AsyncSleep(timer, kIdle, use_awaitable));
      if (read.index() == 1) co_return;  // idle: the socket closes
      const size_t n = std::get<0>(read);
      const std::string request = buffer.substr(0, n - 1);
      buffer.erase(0, n);
      const std::string reply = co_await Answer(timer, request) + "\n";
      co_await asio::async_write(socket, asio::buffer(reply), use_awaitable);
    }
  } catch (const std::system_error&) {
    // The client went away.
  }
}

awaitable<void> Serve(tcp::acceptor& acceptor, tickwheel::Timer& timer) {
  // One client in this example; a server would loop and co_spawn each.
  tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
  co_await Session(std::move(socket), timer);
}

struct Report {
  std::string fast, slow;
  bool closed_by_server = false;
};

awaitable<std::string> Ask(tcp::socket& socket, std::string request) {
  request += "\n";
  co_await asio::async_write(socket, asio::buffer(request), use_awaitable);
  std::string line;
  const size_t n = co_await asio::async_read_until(
      socket, asio::dynamic_buffer(line), '\n', use_awaitable);
  co_return line.substr(0, n - 1);
}

// True when the server closes the connection (end of file), with nothing
// more sent.
awaitable<bool> ClosedByServer(tcp::socket& socket) {
  std::string rest;
  try {
    co_await asio::async_read(socket, asio::dynamic_buffer(rest),
                              use_awaitable);
  } catch (const std::system_error& e) {
    co_return e.code() == asio::error::eof&& rest.empty();
  }
  co_return false;
}

awaitable<void> Client(tcp::endpoint server, tickwheel::Timer& timer,
                       Report& report) {
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  report.fast = co_await Ask(socket, "work 10 2000");
  report.slow = co_await Ask(socket, "work 60000 300");
  // Silent now: the server closes the connection after kIdle. The client's
  // own bound, 10 s, only keeps a broken server from hanging the example.
  std::variant<bool, std::monostate> end =
      co_await (ClosedByServer(socket) ||
                tickwheel::AsyncSleep(timer, absl::Seconds(10), use_awaitable));
  report.closed_by_server = end.index() == 0 && std::get<0>(end);
}

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

void Rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  std::unique_ptr<tickwheel::Timer> timer =
      tickwheel::Timer::Create(options).value();

  asio::io_context io;
  tcp::acceptor acceptor(io,
                         tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  Report report;
  asio::co_spawn(io, Serve(acceptor, *timer), Rethrow);
  asio::co_spawn(io, Client(acceptor.local_endpoint(), *timer, report),
                 Rethrow);
  try {
    io.run();  // returns when the client and the server are done
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }

  std::printf("      replies: \"%s\", \"%s\"\n", report.fast.c_str(),
              report.slow.c_str());
  Check(report.fast == "done 10", "work within its deadline is done");
  Check(report.slow == "deadline exceeded",
        "work past its deadline is cut off by the deadline");
  Check(report.closed_by_server, "a silent connection is closed by the server");
  Check(timer->pendingTimeouts() == 0, "no deadline is left on the timer");
  Check(timer->stop().value().empty(), "stop() returns nothing");

  std::printf("%s\n", failures == 0 ? "all checks passed" : "checks FAILED");
  return failures == 0 ? 0 : 1;
}
