// The idle tracker on something real: tools/echo_server_lib's epoll echo
// server on 127.0.0.1, 500 client connections. Half keep chatting (send, read
// the echo, every 100 ms); half go silent at staggered times. Checks that
// exactly the silent ones are closed (the client sees EOF), none before the
// idle timeout measured from its last send on the client side, each within a
// tick, a refresh period and a generous bound after it, and that the busy ones
// are untouched: every echo arrives, no EOF. Loopback only; about 4 s.

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/loopback_client.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tools/echo_server_lib.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::ConnectLoopback;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kClients = 500;
constexpr absl::Duration kIdle = absl::Seconds(1);
constexpr absl::Duration kTick = absl::Milliseconds(20);
constexpr auto kChatEvery = milliseconds(100);
// How late after (last send + idle timeout) a close may be seen: one tick
// and one refresh period by design, plus a generous allowance for a loaded
// machine and sanitizers.
constexpr auto kLateBound = milliseconds(20 + 20 + 1500);

absl::Duration ToAbsl(SteadyClock::duration d) { return absl::FromChrono(d); }

void RaiseFdLimit(rlim_t need) {
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur >= need) return;
  rl.rlim_cur = std::min(need, rl.rlim_max);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  ASSERT_GE(rl.rlim_cur, need) << "hard RLIMIT_NOFILE too low for the test";
}

struct Client {
  int fd = -1;
  bool busy = false;
  SteadyClock::time_point stop_chatting;  // silent ones stop sending then
  SteadyClock::time_point last_send;
  SteadyClock::time_point eof_at;
  bool eof = false;
  int error = 0;  // errno of a failed read, if any
  int seq = 0;
  std::string sent, received;
};

void Send(Client& c, int index) {
  const std::string msg = fmt::format("client {} message {}\n", index, c.seq++);
  c.last_send = SteadyClock::now();  // before send(): the server reads later
  const ssize_t n = send(c.fd, msg.data(), msg.size(), MSG_NOSIGNAL);
  ASSERT_EQ(n, static_cast<ssize_t>(msg.size())) << std::strerror(errno);
  c.sent += msg;
}

// Reads what is there; records EOF (and its time) or an error.
void Drain(Client& c, int epoll_fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(c.fd, buf, sizeof(buf));
    if (n > 0) {
      c.received.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) c.error = errno;
    c.eof = true;
    c.eof_at = SteadyClock::now();
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    return;
  }
}

void Poll(std::vector<Client>& clients, int epoll_fd, int timeout_ms) {
  epoll_event events[256];
  const int n = epoll_wait(epoll_fd, events, 256, timeout_ms);
  for (int i = 0; i < n; ++i) Drain(clients[events[i].data.u32], epoll_fd);
}

// The server on its own I/O thread with an idle tracker, and kClients
// clients connected to it, even-numbered ones busy. The test body is the
// behaviour; the steps it takes are the members.
class EchoIdleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RaiseFdLimit(2 * kClients + 128);
    IdleTrackerOptions options;
    options.default_idle_timeout = kIdle;
    options.tick_duration = kTick;
    options.thread_name = "echo-idle";
    tracker_ = IdleTracker::Create(options).value();
    tools::EchoServerOptions server_options;
    server_options.address = "127.0.0.1";
    server_ = tools::EchoServer::Create(tracker_.get(), server_options).value();
    io_ = std::thread([this] { EXPECT_TRUE(server_->Run().ok()); });
  }

  // The body stops the server itself; this is for a body that ended early.
  void TearDown() override {
    CloseClients();
    if (io_.joinable()) StopServer();
  }

  void ConnectClients() {
    clients_.resize(kClients);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(epoll_fd_, 0);
    for (int i = 0; i < kClients; ++i) {
      Client& c = clients_[i];
      c.fd = ConnectLoopback(server_->port());
      ASSERT_GE(c.fd, 0) << "connect #" << i << ": " << std::strerror(errno);
      c.busy = i % 2 == 0;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u32 = static_cast<uint32_t>(i);
      ASSERT_EQ(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev), 0);
    }
  }

  // Every connection echoes once, so all are accepted and tracked; true when
  // every echo arrived.
  bool Handshake() {
    for (int i = 0; i < kClients; ++i) Send(clients_[i], i);
    return PollUntilEchoed(std::chrono::seconds(10));
  }

  // Busy clients send every kChatEvery throughout; silent ones stop at 0 to
  // 450 ms. Ends once every silent one is closed, and at least 2.5 s in, or
  // after 15 s.
  void ChatUntilTheSilentAreClosed() {
    const auto start = SteadyClock::now();
    for (int i = 0; i < kClients; ++i) {
      clients_[i].stop_chatting = start + milliseconds(50 * ((i / 2) % 10));
    }
    auto next_chat = start;
    for (;;) {
      const auto now = SteadyClock::now();
      if (now >= next_chat) {
        for (int i = 0; i < kClients; ++i) {
          Client& c = clients_[i];
          if (!c.eof && (c.busy || now < c.stop_chatting)) Send(c, i);
        }
        next_chat += kChatEvery;
      }
      Poll(clients_, epoll_fd_, 5);
      const auto elapsed = SteadyClock::now() - start;
      if (SilentClosed() == kClients / 2 && elapsed >= milliseconds(2500)) {
        break;
      }
      if (elapsed > std::chrono::seconds(15)) break;
    }
  }

  // Every client got back what it sent; the busy ones were never closed; the
  // silent ones were, without error, no earlier than the idle timeout after
  // their last send (less the clock lag the tracker reported) and within
  // kLateBound of it. Sets the earliest and latest close, relative to that
  // timeout.
  void CheckEveryClient(absl::Duration lag, absl::Duration* min_margin,
                        absl::Duration* max_delay) const {
    *min_margin = absl::InfiniteDuration();
    *max_delay = -absl::InfiniteDuration();
    for (int i = 0; i < kClients; ++i) {
      const Client& c = clients_[i];
      EXPECT_EQ(c.received, c.sent) << "client " << i << " lost echoes";
      if (c.busy) {
        EXPECT_FALSE(c.eof) << "busy client " << i << " was closed";
        continue;
      }
      ASSERT_TRUE(c.eof) << "silent client " << i << " was never closed";
      EXPECT_EQ(c.error, 0)
          << "silent client " << i << ": " << std::strerror(c.error);
      const absl::Duration idle_for = ToAbsl(c.eof_at - c.last_send);
      *min_margin = std::min(*min_margin, idle_for - kIdle);
      *max_delay = std::max(*max_delay, idle_for - kIdle);
      // Never before the idle timeout: the only allowance is the documented
      // one, the coarse clock's observed lag when the worker was late.
      EXPECT_GE(idle_for + lag, kIdle)
          << "silent client " << i << " closed early";
      EXPECT_LE(idle_for, kIdle + ToAbsl(kLateBound))
          << "silent client " << i << " closed late";
    }
  }

  // Closes the clients' side of every connection (idempotent).
  void CloseClients() {
    for (Client& c : clients_) {
      if (c.fd >= 0) close(c.fd);
      c.fd = -1;
    }
    if (epoll_fd_ >= 0) close(epoll_fd_);
    epoll_fd_ = -1;
  }

  // Waits (at most 10 s) until the server has seen `n` clients close.
  void AwaitClosedByPeer(int64_t n) const {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while (server_->stats().closed_by_peer < n &&
           SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  void StopServer() {
    server_->Stop();
    io_.join();
  }

  bool PollUntilEchoed(SteadyClock::duration patience) {
    const auto deadline = SteadyClock::now() + patience;
    while (!AllEchoed() && SteadyClock::now() < deadline) {
      Poll(clients_, epoll_fd_, 5);
    }
    return AllEchoed();
  }

  bool AllEchoed() const {
    return std::all_of(clients_.begin(), clients_.end(), [](const Client& c) {
      return c.received.size() == c.sent.size();
    });
  }

  int SilentClosed() const {
    int n = 0;
    for (const Client& c : clients_) n += !c.busy && c.eof;
    return n;
  }

  std::unique_ptr<IdleTracker> tracker_;
  std::unique_ptr<tools::EchoServer> server_;  // on tracker_
  std::thread io_;                             // runs server_
  std::vector<Client> clients_;
  int epoll_fd_ = -1;  // the clients' sockets, for reading
};

TEST_F(EchoIdleTest, ClosesExactlyTheSilentConnections) {
  ASSERT_NO_FATAL_FAILURE(ConnectClients());
  ASSERT_TRUE(Handshake()) << "handshake echoes missing";
  EXPECT_EQ(tracker_->metrics().tracked, kClients);

  ChatUntilTheSilentAreClosed();
  // Let the last busy echoes arrive.
  PollUntilEchoed(std::chrono::seconds(5));

  const IdleTrackerMetrics m = tracker_->metrics();
  absl::Duration min_margin, max_delay;
  ASSERT_NO_FATAL_FAILURE(
      CheckEveryClient(m.worst_clock_lag, &min_margin, &max_delay));
  fmt::print(
      "echo idle test: closed {} silent; EOF seen {} to {} after the "
      "idle timeout; tracker: {}\ntimer: {}\n",
      SilentClosed(), absl::FormatDuration(min_margin),
      absl::FormatDuration(max_delay), m, tracker_->timerMetrics());
  EXPECT_EQ(m.fired, kClients / 2);
  EXPECT_EQ(m.tracked, kClients / 2);
  tools::EchoServerStats st = server_->stats();
  EXPECT_EQ(st.accepted, kClients);
  EXPECT_EQ(st.closed_idle, kClients / 2);
  EXPECT_EQ(st.closed_by_peer, 0);

  // The busy ones close from their side; the server sees EOF and unregisters.
  CloseClients();
  AwaitClosedByPeer(kClients / 2);
  EXPECT_EQ(server_->stats().closed_by_peer, kClients / 2);
  EXPECT_EQ(tracker_->metrics().tracked, 0);
  StopServer();
  st = server_->stats();
  EXPECT_EQ(st.closed_idle, kClients / 2);
  EXPECT_EQ(st.closed_on_error, 0);
  EXPECT_EQ(st.closed_at_shutdown, 0);  // none was left open
  server_.reset();
  EXPECT_FALSE(tracker_->isActive());
  EXPECT_EQ(tracker_->metrics().fired, kClients / 2);
}

}  // namespace
}  // namespace tickwheel
