// tools/echo_server_lib's EchoServer on 127.0.0.1, one behaviour per test,
// driven by loopback clients written for each case: a client that
// half-closes and reads its echo. Every wait has a generous deadline; no
// test asserts how fast anything happens.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "timer/idle_tracker.h"
#include "tools/echo_server_lib.h"

namespace tickwheel {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Collects the server's CloseEvents (reported on its I/O thread).
class CloseLog {
 public:
  void Add(const tools::CloseEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    cv_.notify_all();
  }
  // Waits until `n` events are in, or `timeout`; returns a copy of them.
  std::vector<tools::CloseEvent> WaitFor(size_t n, SteadyClock::duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<tools::CloseEvent> events_;
};

// A tracker, a server on an ephemeral loopback port with its I/O thread, and
// the close log. Stops and joins the I/O thread on destruction.
class Harness {
 public:
  explicit Harness(absl::Duration idle_timeout,
                   tools::EchoServerOptions options = {}) {
    IdleTrackerOptions tracker_options;
    tracker_options.default_idle_timeout = idle_timeout;
    tracker_options.tick_duration = absl::Milliseconds(20);
    tracker_options.thread_name = "echo-server-test";
    tracker_ = IdleTracker::Create(tracker_options).value();
    options.address = "127.0.0.1";
    options.on_close = [this](const tools::CloseEvent& e) { log_.Add(e); };
    server_ = tools::EchoServer::Create(tracker_.get(), std::move(options)).value();
    io_ = std::thread([this] { EXPECT_TRUE(server_->Run().ok()); });
  }
  ~Harness() { StopAndJoin(); }

  // Makes Run() return and joins the I/O thread; idempotent.
  void StopAndJoin() {
    if (!io_.joinable()) return;
    server_->Stop();
    io_.join();
  }

  tools::EchoServer& server() { return *server_; }
  CloseLog& log() { return log_; }

 private:
  CloseLog log_;
  std::unique_ptr<IdleTracker> tracker_;
  std::unique_ptr<tools::EchoServer> server_;
  std::thread io_;
};

// A connected non-blocking client socket, or -1.
int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// `n` bytes of a pattern with a period that no buffer size divides, so that
// lost, repeated or reordered chunks show up as a mismatch.
std::string Payload(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 251 % 26);
  return s;
}

// What a client saw: the bytes it read, and how its reading ended.
struct Received {
  std::string data;
  bool eof = false;  // read() returned 0
  int error = 0;     // errno of a failed read or send, if any
};

// Sends `payload`, then half-closes (shutdown(SHUT_WR)), reading all along
// until EOF, an error or `timeout`.
Received SendHalfCloseAndRead(int fd, const std::string& payload,
                              SteadyClock::duration timeout) {
  Received r;
  size_t sent = 0;
  bool half_closed = false;
  const auto deadline = SteadyClock::now() + timeout;
  char buf[65536];
  while (!r.eof && r.error == 0 && SteadyClock::now() < deadline) {
    if (sent == payload.size() && !half_closed) {
      if (shutdown(fd, SHUT_WR) != 0) r.error = errno;
      half_closed = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (half_closed ? 0 : POLLOUT)), 0};
    if (poll(&p, 1, 100) <= 0) continue;
    if (p.revents & POLLOUT) {
      const ssize_t n = send(fd, payload.data() + sent,
                             std::min<size_t>(payload.size() - sent, 65536),
                             MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) r.error = errno;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      for (;;) {
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
          r.data.append(buf, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) r.eof = true;
        if (n < 0 && errno != EAGAIN && errno != EINTR) r.error = errno;
        break;
      }
    }
  }
  return r;
}

TEST(EchoServerTest, HalfCloseGetsItsEchoThenEof) {
  Harness h(absl::Seconds(60));
  // One segment, more than one read, and more than the sockets buffer.
  const std::vector<size_t> sizes = {5, 100000, 3 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE(sizes[i]);
    const int fd = Connect(h.server().port());
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string payload = Payload(sizes[i]);
    const Received r = SendHalfCloseAndRead(fd, payload, seconds(30));
    close(fd);
    EXPECT_EQ(r.error, 0) << std::strerror(r.error);
    EXPECT_TRUE(r.eof) << "no EOF after the echo";
    EXPECT_EQ(r.data.size(), payload.size());
    EXPECT_TRUE(r.data == payload) << "the echo differs from what was sent";
    const std::vector<tools::CloseEvent> events = h.log().WaitFor(i + 1, seconds(10));
    ASSERT_EQ(events.size(), i + 1);
    EXPECT_FALSE(events[i].idle);
    EXPECT_EQ(events[i].bytes_echoed, static_cast<int64_t>(sizes[i]));
  }
  const tools::EchoServerStats st = h.server().stats();
  EXPECT_EQ(st.accepted, static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(st.closed_by_peer, static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(st.closed_idle, 0);
}

}  // namespace
}  // namespace tickwheel
