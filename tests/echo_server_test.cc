// tools/echo_server_lib's EchoServer on 127.0.0.1, one behaviour per test,
// driven by loopback clients written for each case: a client that
// half-closes and reads its echo, one that never reads, one that half-closes
// and stops reading, one that reads its echo slowly, one that resets, and
// clients of a server that stops. (The LineLogger that tools/echo_server logs
// through is line_logger_test.) Every wait has a generous deadline; no test
// asserts how fast anything happens.
//
// Where a test needs the kernel's socket buffers to be smaller than its
// payload, the client fixes its SO_RCVBUF (which turns off receive-buffer
// autotuning) and the payload is sized from the largest send buffer the
// kernel autotunes to (tcp_wmem's maximum).

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/loopback_client.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tools/echo_server_lib.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::ConnectLoopback;
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
  std::vector<tools::CloseEvent> WaitFor(size_t n,
                                         SteadyClock::duration timeout) {
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
    server_ =
        tools::EchoServer::Create(tracker_.get(), std::move(options)).value();
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

// The largest TCP send buffer the kernel autotunes to (tcp_wmem's third
// field): at most this much of a server's echo can sit in its socket.
size_t WmemMax() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_wmem");
  size_t min = 0, def = 0, max = 0;
  if (in >> min >> def >> max) return max;
  return size_t{4} << 20;  // the kernel's default
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
      const ssize_t n =
          send(fd, payload.data() + sent,
               std::min<size_t>(payload.size() - sent, 65536), MSG_NOSIGNAL);
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

// Sends all of `payload` without reading; false on error or `timeout`.
// Sends all of `payload` within `timeout`. On failure the result says how far
// it got and why, for the assertion's message.
::testing::AssertionResult SendAll(int fd, const std::string& payload,
                                   SteadyClock::duration timeout) {
  size_t sent = 0;
  const auto deadline = SteadyClock::now() + timeout;
  while (sent < payload.size() && SteadyClock::now() < deadline) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n =
        send(fd, payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return ::testing::AssertionFailure()
             << "send failed after " << sent << " of " << payload.size()
             << " bytes: " << std::strerror(errno);
    }
  }
  if (sent == payload.size()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "sent " << sent << " of " << payload.size() << " bytes in time";
}

// Reads into `r` until it holds `want` bytes, EOF, an error or `timeout`.
void ReadUntil(int fd, size_t want, SteadyClock::duration timeout,
               Received* r) {
  const auto deadline = SteadyClock::now() + timeout;
  char buf[65536];
  while (r->data.size() < want && !r->eof && r->error == 0 &&
         SteadyClock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n =
        read(fd, buf, std::min(sizeof(buf), want - r->data.size()));
    if (n > 0) r->data.append(buf, static_cast<size_t>(n));
    if (n == 0) r->eof = true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) r->error = errno;
  }
}

// Sends `message` and reads it back; false on error, a wrong echo or
// `timeout`.
bool EchoOnce(int fd, const std::string& message,
              SteadyClock::duration timeout) {
  if (!SendAll(fd, message, timeout)) return false;
  Received r;
  ReadUntil(fd, message.size(), timeout, &r);
  return r.data == message;
}

TEST(EchoServerTest, HalfCloseGetsItsEchoThenEof) {
  constexpr int64_t kBound = 64 << 10;
  tools::EchoServerOptions options;
  options.max_buffered_bytes = kBound;
  Harness h(absl::Seconds(60), options);
  // One segment, more than one read, and many times the buffer bound (so
  // reading pauses and resumes while the client reads).
  const std::vector<size_t> sizes = {5, 100000, 3 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE(sizes[i]);
    const int fd = ConnectLoopback(h.server().port());
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string payload = Payload(sizes[i]);
    const Received r = SendHalfCloseAndRead(fd, payload, seconds(30));
    close(fd);
    EXPECT_EQ(r.error, 0) << std::strerror(r.error);
    EXPECT_TRUE(r.eof) << "no EOF after the echo";
    EXPECT_EQ(r.data.size(), payload.size());
    EXPECT_TRUE(r.data == payload) << "the echo differs from what was sent";
    const std::vector<tools::CloseEvent> events =
        h.log().WaitFor(i + 1, seconds(10));
    ASSERT_EQ(events.size(), i + 1);
    EXPECT_EQ(events[i].reason, tools::CloseReason::kPeer);
    EXPECT_EQ(events[i].bytes_echoed, static_cast<int64_t>(sizes[i]));
  }
  const tools::EchoServerStats st = h.server().stats();
  EXPECT_EQ(st.accepted, static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(st.closed_by_peer, static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(st.closed_idle, 0);
  EXPECT_LE(st.max_buffered_bytes, kBound);
  EXPECT_EQ(st.buffered_bytes, 0);
}

TEST(EchoServerTest, CreateRejectsANonPositiveBufferBound) {
  auto tracker = IdleTracker::Create().value();
  for (int64_t bound : {int64_t{0}, int64_t{-1}}) {
    tools::EchoServerOptions options;
    options.max_buffered_bytes = bound;
    const auto server = tools::EchoServer::Create(tracker.get(), options);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument)
        << bound << ": " << server.status();
  }
  EXPECT_FALSE(tracker->isActive());
}

// The reported case: a client that sends and never reads. The server must
// hold at most the bound (it stops reading), and since nothing moves, the
// idle timeout must close the connection although the client keeps trying
// to send.
TEST(EchoServerTest, ClientThatNeverReadsIsBoundedAndClosedWhenIdle) {
  constexpr int64_t kBound = 64 << 10;
  tools::EchoServerOptions options;
  options.max_buffered_bytes = kBound;
  Harness h(absl::Seconds(1), options);
  const int fd = ConnectLoopback(h.server().port(), /*rcvbuf=*/64 << 10);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const std::string chunk = Payload(64 << 10);
  bool filled = false;  // the server held a full buffer at some point
  std::vector<tools::CloseEvent> events;
  const auto deadline = SteadyClock::now() + seconds(30);
  while (events.empty() && SteadyClock::now() < deadline) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 10) > 0 && (p.revents & POLLOUT)) {
      (void)send(fd, chunk.data(), chunk.size(),
                 MSG_NOSIGNAL);  // may fail once closed
    }
    filled = filled || h.server().stats().max_buffered_bytes >= kBound;
    events = h.log().WaitFor(1, milliseconds(0));
  }
  close(fd);
  EXPECT_TRUE(filled) << "the client never filled the server's buffer";
  ASSERT_EQ(events.size(), 1u) << "the connection was not closed";
  const tools::CloseEvent& e = events[0];
  EXPECT_EQ(e.reason, tools::CloseReason::kIdle);
  EXPECT_GT(e.bytes_unsent, 0);
  EXPECT_LE(e.bytes_unsent, kBound);
  EXPECT_EQ(e.bytes_read, e.bytes_echoed + e.bytes_unsent);
  const tools::EchoServerStats st = h.server().stats();
  EXPECT_EQ(st.max_buffered_bytes, kBound) << "the bound was exceeded";
  EXPECT_EQ(st.buffered_bytes, 0);
  EXPECT_EQ(st.closed_idle, 1);
}

// A client that half-closes and then never reads its echo: the server has
// read everything and EOF, but cannot write; it must not wait for ever.
TEST(EchoServerTest, HalfClosedClientThatStopsReadingIsClosedWhenIdle) {
  const size_t size = WmemMax() + (8 << 20);  // more than the sockets hold
  tools::EchoServerOptions options;
  options.max_buffered_bytes = static_cast<int64_t>(2 * size);  // reads it all
  // Long enough that a client starved of CPU on a loaded machine still
  // counts as sending: the idle close must come after the EOF, not during
  // the upload.
  Harness h(absl::Seconds(3), options);
  const int fd = ConnectLoopback(h.server().port(), /*rcvbuf=*/64 << 10);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(SendAll(fd, Payload(size), seconds(60)));
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0) << std::strerror(errno);
  const std::vector<tools::CloseEvent> events = h.log().WaitFor(1, seconds(30));
  close(fd);
  ASSERT_EQ(events.size(), 1u) << "the connection was not closed";
  const tools::CloseEvent& e = events[0];
  EXPECT_EQ(e.reason, tools::CloseReason::kIdle);
  EXPECT_TRUE(e.read_eof);
  EXPECT_EQ(e.bytes_read, static_cast<int64_t>(size));
  EXPECT_GT(e.bytes_unsent, 0) << "the echo fitted in the sockets after all";
  EXPECT_EQ(e.bytes_echoed + e.bytes_unsent, static_cast<int64_t>(size));
  EXPECT_EQ(h.server().stats().buffered_bytes, 0);
}

// Writing echo to a client is progress too: a half-closed client that reads
// its (large) echo in bursts separated by pauses shorter than the idle
// timeout, for longer than the idle timeout in all, keeps its connection
// and gets everything, then EOF. Each burst reads more than the sockets
// hold, so the server must write during every burst.
TEST(EchoServerTest, HalfClosedClientReadingSlowlyIsNotClosedWhileItReads) {
  // The server's thread must read within kIdle while the client sends 40 MB
  // to it; a sanitizer build on a loaded machine can starve it for seconds,
  // so there both the idle timeout and the pauses are longer.
#if defined(ADDRESS_SANITIZER) || defined(THREAD_SANITIZER)
  constexpr int kScale = 4;
#else
  constexpr int kScale = 1;
#endif
  constexpr absl::Duration kIdle = absl::Seconds(3 * kScale);
  constexpr int kBursts = 7;
  constexpr auto kPause = milliseconds(500 * kScale);  // kBursts pauses > kIdle
  const size_t burst = WmemMax() + (1 << 20);
  const std::string payload = Payload((kBursts + 1) * burst);
  tools::EchoServerOptions options;
  options.max_buffered_bytes = static_cast<int64_t>(payload.size());
  Harness h(kIdle, options);
  const int fd = ConnectLoopback(h.server().port(), /*rcvbuf=*/64 << 10);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(SendAll(fd, payload, seconds(60)));
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0) << std::strerror(errno);
  Received r;
  for (int i = 1; i <= kBursts; ++i) {
    std::this_thread::sleep_for(kPause);
    ReadUntil(fd, i * burst, seconds(30), &r);
    ASSERT_EQ(r.data.size(), i * burst) << "burst " << i << " eof=" << r.eof
                                        << " error=" << std::strerror(r.error);
  }
  ReadUntil(fd, payload.size() + 1, seconds(30), &r);  // the rest, then EOF
  close(fd);
  EXPECT_EQ(r.error, 0) << std::strerror(r.error);
  EXPECT_TRUE(r.eof);
  EXPECT_TRUE(r.data == payload) << "the echo differs from what was sent";
  const std::vector<tools::CloseEvent> events = h.log().WaitFor(1, seconds(10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, tools::CloseReason::kPeer);
  EXPECT_EQ(events[0].bytes_unsent, 0);
}

// Connections the server closes because it stops are reported as such,
// not as closed by the client, and their clients see EOF.
TEST(EchoServerTest, ShutdownClosesAreReportedAsShutdown) {
  constexpr int kClients = 3;
  Harness h(absl::Seconds(60));
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    fds.push_back(ConnectLoopback(h.server().port()));
    ASSERT_GE(fds.back(), 0) << std::strerror(errno);
    // Echoed once: accepted and served before the stop.
    ASSERT_TRUE(EchoOnce(fds.back(), "hello\n", seconds(10)));
  }
  h.StopAndJoin();
  const std::vector<tools::CloseEvent> events =
      h.log().WaitFor(kClients, seconds(0));
  ASSERT_EQ(events.size(), static_cast<size_t>(kClients));
  for (const tools::CloseEvent& e : events) {
    EXPECT_EQ(e.reason, tools::CloseReason::kShutdown)
        << "connection #" << e.id;
    EXPECT_EQ(e.bytes_echoed, 6);
  }
  const tools::EchoServerStats st = h.server().stats();
  EXPECT_EQ(st.closed_at_shutdown, kClients);
  EXPECT_EQ(st.closed_by_peer, 0);
  EXPECT_EQ(st.closed_idle, 0);
  EXPECT_EQ(st.closed_on_error, 0);
  for (int fd : fds) {
    Received r;
    ReadUntil(fd, 1, seconds(10), &r);
    EXPECT_TRUE(r.eof && r.data.empty() && r.error == 0)
        << "eof=" << r.eof << " bytes=" << r.data.size()
        << " error=" << r.error;
    close(fd);
  }
}

// A client that resets its connection (SO_LINGER 0, then close) is reported
// as an error, with the errno the server saw.
TEST(EchoServerTest, ResetByClientIsReportedAsError) {
  Harness h(absl::Seconds(60));
  const int fd = ConnectLoopback(h.server().port());
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(EchoOnce(fd, "x", seconds(10)));
  const linger abort_on_close{1, 0};
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close,
                       sizeof(abort_on_close)),
            0);
  close(fd);  // sends RST instead of FIN
  const std::vector<tools::CloseEvent> events = h.log().WaitFor(1, seconds(10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, tools::CloseReason::kError);
  EXPECT_EQ(events[0].error, ECONNRESET) << std::strerror(events[0].error);
  const tools::EchoServerStats st = h.server().stats();
  EXPECT_EQ(st.closed_on_error, 1);
  EXPECT_EQ(st.closed_by_peer, 0);
}

TEST(EchoServerTest, ReasonNames) {
  EXPECT_STREQ(tools::CloseReasonName(tools::CloseReason::kPeer), "peer");
  EXPECT_STREQ(tools::CloseReasonName(tools::CloseReason::kIdle), "idle");
  EXPECT_STREQ(tools::CloseReasonName(tools::CloseReason::kShutdown),
               "shutdown");
  EXPECT_STREQ(tools::CloseReasonName(tools::CloseReason::kError), "error");
}

}  // namespace
}  // namespace tickwheel
