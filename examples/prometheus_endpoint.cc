// examples/prometheus_endpoint.cc: a /metrics endpoint for a Timer.
//
// A tiny HTTP/1.1 server on 127.0.0.1 (plain POSIX sockets, one connection at
// a time, on its own thread) answers GET /metrics with the Timer's metrics in
// the Prometheus text format (timer/prometheus.h), taken fresh for every
// scrape: a snapshot (Timer::metrics()) and its text, nothing kept between
// scrapes. Any other path is 404, any other method 405.
//
// Run as it is, it serves on a free port, runs a few timeouts, scrapes
// itself once as Prometheus would, checks the answer and exits (non-zero if
// anything is wrong). With --serve it prints its port and serves until it is
// killed:
//
//   bazel run //examples:prometheus_endpoint -- --serve
//   curl http://127.0.0.1:<port>/metrics

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/timer/prometheus.h"
#include "tickwheel/timer/timer.h"

namespace {

// Reads a request up to the end of its headers (bounded), with a timeout,
// so that a slow or silent client cannot hold the server.
std::string ReadRequest(int fd) {
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request;
  char buf[1024];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.size() < 8192) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  return request;
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// The answer to one request line.
std::string Respond(std::string_view request, tickwheel::Timer& timer) {
  const auto reply = [](std::string_view status, std::string_view type,
                        const std::string& body) {
    return fmt::format(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        status, type, body.size(), body);
  };
  const std::string_view line = request.substr(0, request.find("\r\n"));
  if (!line.starts_with("GET ")) {
    return reply("405 Method Not Allowed", "text/plain", "GET only\n");
  }
  const std::string_view target = line.substr(4, line.find(' ', 4) - 4);
  if (target != "/metrics") {
    return reply("404 Not Found", "text/plain", "try /metrics\n");
  }
  absl::StatusOr<std::string> text =
      tickwheel::PrometheusText(timer.metrics(), {{"timer", "main"}});
  if (!text.ok()) {
    return reply("500 Internal Server Error", "text/plain",
                 text.status().ToString() + "\n");
  }
  return reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", *text);
}

// Serves one connection at a time until `stop` is set and the listener is
// shut down, which makes accept() fail (Linux).
void Serve(int listener, tickwheel::Timer& timer,
           const std::atomic<bool>& stop) {
  while (!stop.load()) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    WriteAll(fd, Respond(ReadRequest(fd), timer));
    close(fd);
  }
}

// A listening socket on 127.0.0.1:`port` (0: a free one); -1 on failure.
int Listen(int port, int* bound_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  *bound_port = ntohs(addr.sin_port);
  return fd;
}

// A GET of `path` on 127.0.0.1:`port`, as a scraper sends it: the whole
// response, or empty when the connection failed.
std::string Get(int port, std::string_view path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    WriteAll(fd, fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Accept: text/plain\r\n\r\n",
                             path));
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
      response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

bool Check(bool ok, std::string_view what) {
  if (!ok) fmt::print(stderr, "FAILED: {}\n", what);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const bool serve = argc > 1 && std::string_view(argv[1]) == "--serve";
  auto timer =
      tickwheel::Timer::Create({.tick_duration = absl::Milliseconds(1)})
          .value();
  int port = 0;
  const int listener =
      Listen(serve && argc > 2 ? std::atoi(argv[2]) : 0, &port);
  if (listener < 0) {
    fmt::print(stderr, "cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread server([&] { Serve(listener, *timer, stop); });

  // Some work to show: three timeouts that run, one that is cancelled, and
  // a periodic timeout that stays pending (its first run is an hour away).
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    timer->newTimeout([&] { ran.fetch_add(1); }, absl::Milliseconds(2)).value();
  }
  timer->newTimeout([] {}, absl::Hours(1)).value().cancel();
  timer->newPeriodic([] {}, absl::Hours(1), absl::Seconds(1)).value();

  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (ran.load() < 3 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  if (serve) {
    fmt::print("serving http://127.0.0.1:{}/metrics\n", port);
    std::fflush(stdout);
    server.join();  // until killed
    return 0;
  }

  const std::string metrics = Get(port, "/metrics");
  const std::string missing = Get(port, "/other");
  stop.store(true);
  shutdown(listener, SHUT_RDWR);  // accept() fails from now on
  server.join();
  close(listener);
  fmt::print("{}", metrics);

  bool ok = Check(ran.load() == 3, "the three timeouts ran");
  ok &= Check(metrics.starts_with("HTTP/1.1 200 OK\r\n"), "200 for /metrics");
  ok &= Check(metrics.find("Content-Type: text/plain; version=0.0.4") !=
                  std::string::npos,
              "the exposition's content type");
  ok &= Check(metrics.find("# TYPE tickwheel_timer_expired_total counter\n"
                           "tickwheel_timer_expired_total{timer=\"main\"} "
                           "3\n") != std::string::npos,
              "three runs counted");
  ok &= Check(metrics.find("tickwheel_timer_cancelled_total{timer=\"main\"} "
                           "1\n") != std::string::npos,
              "one cancel counted");
  ok &= Check(metrics.find("tickwheel_timer_pending_timeouts{timer=\"main\"} "
                           "1\n") != std::string::npos,
              "the periodic timeout pending");
  ok &= Check(metrics.find("tickwheel_timer_lateness_seconds_count{timer="
                           "\"main\"} 3\n") != std::string::npos,
              "three lateness samples");
  ok &= Check(missing.starts_with("HTTP/1.1 404 "), "404 for another path");
  return ok ? 0 : 1;
}
