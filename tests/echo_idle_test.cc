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

TEST(EchoIdleTest, ClosesExactlyTheSilentConnections) {
  RaiseFdLimit(2 * kClients + 128);

  IdleTrackerOptions options;
  options.default_idle_timeout = kIdle;
  options.tick_duration = kTick;
  options.thread_name = "echo-idle";
  auto tracker = IdleTracker::Create(options).value();
  tools::EchoServerOptions server_options;
  server_options.address = "127.0.0.1";
  auto server =
      tools::EchoServer::Create(tracker.get(), server_options).value();
  std::thread io([&] { EXPECT_TRUE(server->Run().ok()); });

  std::vector<Client> clients(kClients);
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(epoll_fd, 0);
  for (int i = 0; i < kClients; ++i) {
    Client& c = clients[i];
    c.fd = ConnectLoopback(server->port());
    ASSERT_GE(c.fd, 0) << "connect #" << i << ": " << std::strerror(errno);
    c.busy = i % 2 == 0;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = static_cast<uint32_t>(i);
    ASSERT_EQ(epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &ev), 0);
  }
  // Handshake: every connection echoes once, so all are accepted and tracked.
  for (int i = 0; i < kClients; ++i) Send(clients[i], i);
  const auto handshake_deadline = SteadyClock::now() + std::chrono::seconds(10);
  auto echoed = [&] {
    return std::all_of(clients.begin(), clients.end(), [](const Client& c) {
      return c.received.size() == c.sent.size();
    });
  };
  while (!echoed() && SteadyClock::now() < handshake_deadline) {
    Poll(clients, epoll_fd, 5);
  }
  ASSERT_TRUE(echoed()) << "handshake echoes missing";
  EXPECT_EQ(tracker->metrics().tracked, kClients);

  // Chat: busy ones every 100 ms throughout; silent ones stop at 0..450 ms.
  const auto start = SteadyClock::now();
  for (int i = 0; i < kClients; ++i) {
    clients[i].stop_chatting = start + milliseconds(50 * ((i / 2) % 10));
  }
  auto next_chat = start;
  auto silent_closed = [&] {
    int n = 0;
    for (const Client& c : clients) n += !c.busy && c.eof;
    return n;
  };
  for (;;) {
    const auto now = SteadyClock::now();
    if (now >= next_chat) {
      for (int i = 0; i < kClients; ++i) {
        Client& c = clients[i];
        if (!c.eof && (c.busy || now < c.stop_chatting)) Send(c, i);
      }
      next_chat += kChatEvery;
    }
    Poll(clients, epoll_fd, 5);
    const auto elapsed = SteadyClock::now() - start;
    if (silent_closed() == kClients / 2 && elapsed >= milliseconds(2500)) break;
    if (elapsed > std::chrono::seconds(15)) break;
  }
  // Let the last busy echoes arrive.
  const auto drain_deadline = SteadyClock::now() + std::chrono::seconds(5);
  while (!echoed() && SteadyClock::now() < drain_deadline) {
    Poll(clients, epoll_fd, 5);
  }

  const IdleTrackerMetrics m = tracker->metrics();
  const absl::Duration lag = m.worst_clock_lag;
  absl::Duration min_margin = absl::InfiniteDuration();
  absl::Duration max_delay = -absl::InfiniteDuration();
  for (int i = 0; i < kClients; ++i) {
    const Client& c = clients[i];
    EXPECT_EQ(c.received, c.sent) << "client " << i << " lost echoes";
    if (c.busy) {
      EXPECT_FALSE(c.eof) << "busy client " << i << " was closed";
      continue;
    }
    ASSERT_TRUE(c.eof) << "silent client " << i << " was never closed";
    EXPECT_EQ(c.error, 0) << "silent client " << i << ": "
                          << std::strerror(c.error);
    const absl::Duration idle_for = ToAbsl(c.eof_at - c.last_send);
    min_margin = std::min(min_margin, idle_for - kIdle);
    max_delay = std::max(max_delay, idle_for - kIdle);
    // Never before the idle timeout: the only allowance is the documented one,
    // the coarse clock's observed lag when the worker was late.
    EXPECT_GE(idle_for + lag, kIdle)
        << "silent client " << i << " closed early";
    EXPECT_LE(idle_for, kIdle + ToAbsl(kLateBound))
        << "silent client " << i << " closed late";
  }
  fmt::print(
      "echo idle test: closed {} silent; EOF seen {} to {} after the "
      "idle timeout; tracker: {}\ntimer: {}\n",
      silent_closed(), absl::FormatDuration(min_margin),
      absl::FormatDuration(max_delay), m, tracker->timerMetrics());
  EXPECT_EQ(m.fired, kClients / 2);
  EXPECT_EQ(m.tracked, kClients / 2);
  tools::EchoServerStats st = server->stats();
  EXPECT_EQ(st.accepted, kClients);
  EXPECT_EQ(st.closed_idle, kClients / 2);
  EXPECT_EQ(st.closed_by_peer, 0);

  // The busy ones close from their side; the server sees EOF and unregisters.
  for (Client& c : clients) close(c.fd);
  close(epoll_fd);
  const auto close_deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (server->stats().closed_by_peer < kClients / 2 &&
         SteadyClock::now() < close_deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(server->stats().closed_by_peer, kClients / 2);
  EXPECT_EQ(tracker->metrics().tracked, 0);
  server->Stop();
  io.join();
  st = server->stats();
  EXPECT_EQ(st.closed_idle, kClients / 2);
  EXPECT_EQ(st.closed_on_error, 0);
  EXPECT_EQ(st.closed_at_shutdown, 0);  // none was left open
  server.reset();
  EXPECT_FALSE(tracker->isActive());
  EXPECT_EQ(tracker->metrics().fired, kClients / 2);
}

}  // namespace
}  // namespace tickwheel
