#include "tools/echo_server_lib.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tickwheel::tools {
namespace {

absl::Status Errno(const char* what) {
  return absl::InternalError(fmt::format("{}: {}", what, std::strerror(errno)));
}

// The most one read() takes. A read never takes more than the room left
// under the buffer bound, so a buffer never exceeds the bound.
constexpr size_t kReadChunk = 16384;
// A drained buffer whose capacity exceeds this gives its memory back, so a
// connection that once filled its buffer does not keep it while quiet.
constexpr size_t kKeptCapacity = 65536;

std::string PeerName(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return fmt::format("{}:{}", buf, ntohs(a.sin_port));
}

}  // namespace

const char* CloseReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kPeer:
      return "peer";
    case CloseReason::kIdle:
      return "idle";
    case CloseReason::kShutdown:
      return "shutdown";
    case CloseReason::kError:
      return "error";
  }
  return "unknown";
}

struct EchoServer::Conn {
  int fd = -1;
  uint64_t id = 0;
  std::string peer;
  absl::Time accepted_at;
  std::string out;  // echo bytes; those before out_off are written
  size_t out_off = 0;
  int64_t bytes_read = 0;
  int64_t bytes_echoed = 0;
  bool reading = true;    // EPOLLIN wanted: not at EOF, buffer under the bound
  bool read_eof = false;  // the client half-closed (or on_idle shut us down)
  uint32_t interest = 0;  // the epoll event mask currently registered
  int error = 0;          // errno of the failed read or write, if any
  // Set by on_idle (tracker thread) before it shuts the socket down; read by
  // the loop after unregister(), which orders it after on_idle anyway.
  std::atomic<bool> idle_fired{false};
  IdleHandle idle;
};

EchoServer::EchoServer(IdleTracker* tracker, EchoServerOptions options)
    : tracker_(tracker), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<EchoServer>> EchoServer::Create(
    IdleTracker* tracker, EchoServerOptions options) {
  if (options.max_buffered_bytes <= 0) {
    return absl::InvalidArgumentError(fmt::format(
        "max_buffered_bytes must be > 0, not {}", options.max_buffered_bytes));
  }
  std::unique_ptr<EchoServer> s(new EchoServer(tracker, std::move(options)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(s->options_.port);
  if (inet_pton(AF_INET, s->options_.address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("not an IPv4 address: '{}'", s->options_.address));
  }
  s->listen_fd_ =
      socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return Errno("socket");
  int one = 1;
  setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    return Errno("bind");
  }
  if (listen(s->listen_fd_, 4096) != 0) return Errno("listen");
  socklen_t len = sizeof(addr);
  getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);

  s->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (s->epoll_fd_ < 0) return Errno("epoll_create1");
  s->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->stop_fd_ < 0) return Errno("eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listener
  if (epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->listen_fd_, &ev) != 0) {
    return Errno("epoll_ctl(listen)");
  }
  ev.data.ptr = &s->stop_fd_;
  if (epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->stop_fd_, &ev) != 0) {
    return Errno("epoll_ctl(eventfd)");
  }
  if (absl::Status st = tracker->Activate(); !st.ok()) return st;
  s->activated_ = true;
  return s;
}

EchoServer::~EchoServer() {
  CloseAll(CloseReason::kShutdown);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  if (activated_) (void)tracker_->Deactivate();
}

void EchoServer::Stop() {
  const uint64_t one = 1;
  ssize_t n = write(stop_fd_, &one, sizeof(one));
  (void)n;
}

EchoServerStats EchoServer::stats() const {
  EchoServerStats s;
  s.accepted = accepted_.load(std::memory_order_relaxed);
  s.closed_idle = closed_idle_.load(std::memory_order_relaxed);
  s.closed_by_peer = closed_by_peer_.load(std::memory_order_relaxed);
  s.closed_at_shutdown = closed_at_shutdown_.load(std::memory_order_relaxed);
  s.closed_on_error = closed_on_error_.load(std::memory_order_relaxed);
  s.bytes_echoed = bytes_echoed_.load(std::memory_order_relaxed);
  s.buffered_bytes = buffered_bytes_.load(std::memory_order_relaxed);
  s.max_buffered_bytes = max_buffered_bytes_.load(std::memory_order_relaxed);
  return s;
}

absl::Status EchoServer::Run() {
  std::vector<epoll_event> events(256);
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events.data(),
                             static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == nullptr) {
        AcceptAll();
      } else if (tag == &stop_fd_) {
        uint64_t v;
        ssize_t r = read(stop_fd_, &v, sizeof(v));
        (void)r;
        CloseAll(CloseReason::kShutdown);
        return absl::OkStatus();
      } else {
        // Each descriptor appears once per batch and only OnEvents() closes
        // (its own connection), so `c` is alive here.
        OnEvents(static_cast<Conn*>(tag));
      }
    }
  }
}

void EchoServer::AcceptAll() {
  for (;;) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;  // EAGAIN, or a transient error (EMFILE...): retry later
    auto conn = std::make_unique<Conn>();
    Conn* c = conn.get();
    c->fd = fd;
    c->id = next_id_++;
    c->peer = PeerName(peer);
    c->accepted_at = absl::Now();
    auto on_idle = [c] {
      c->idle_fired.store(true, std::memory_order_release);
      shutdown(c->fd, SHUT_RDWR);
    };
    absl::StatusOr<IdleHandle> h =
        options_.idle_timeout > absl::ZeroDuration()
            ? tracker_->Register(on_idle, options_.idle_timeout)
            : tracker_->Register(on_idle);
    if (!h.ok()) {
      close(fd);
      continue;
    }
    c->idle = *std::move(h);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c;
    c->interest = ev.events;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      c->idle.unregister();
      close(fd);
      continue;
    }
    conns_[fd] = std::move(conn);
    accepted_.fetch_add(1, std::memory_order_relaxed);
  }
}

void EchoServer::OnEvents(Conn* c) {
  // Whatever epoll reported (EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP,
  // EPOLLERR), the reads and writes themselves tell what happened.
  bool ok = Flush(c);
  if (ok && c->reading) ok = ReadSome(c);
  if (ok) ok = Flush(c);
  if (!ok) {
    Close(c, CloseReason::kError);
    return;
  }
  // EOF closes only once everything read has been echoed: a client that
  // half-closed (shutdown(SHUT_WR)) still reads its echo, then gets EOF.
  if (c->read_eof && c->out.size() == c->out_off) {
    Close(c, CloseReason::kPeer);
    return;
  }
  UpdateInterest(c);
}

bool EchoServer::ReadSome(Conn* c) {
  if (c->out_off > 0) {  // drop what was written before appending
    c->out.erase(0, c->out_off);
    c->out_off = 0;
  }
  const size_t bound = static_cast<size_t>(options_.max_buffered_bytes);
  char buf[kReadChunk];
  while (c->reading) {
    const size_t room = bound - c->out.size();
    const ssize_t n = read(c->fd, buf, std::min(sizeof(buf), room));
    if (n > 0) {
      c->idle.touch();  // progress: every byte read is buffered
      c->out.append(buf, static_cast<size_t>(n));
      c->bytes_read += n;
      buffered_bytes_.fetch_add(n, std::memory_order_relaxed);
      const auto held = static_cast<int64_t>(c->out.size());
      if (held > max_buffered_bytes_.load(std::memory_order_relaxed)) {
        max_buffered_bytes_.store(held, std::memory_order_relaxed);
      }
      // At the bound: wait until the client has read some of its echo.
      if (c->out.size() >= bound) c->reading = false;
      continue;
    }
    if (n == 0) {  // the peer's FIN, or our own shutdown from on_idle
      c->read_eof = true;
      c->reading = false;
      return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == EINTR) continue;
    c->error = errno;
    return false;
  }
  return true;
}

bool EchoServer::Flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    const ssize_t n = send(c->fd, c->out.data() + c->out_off,
                           c->out.size() - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->idle.touch();  // progress: the client takes its echo
      c->bytes_echoed += n;
      bytes_echoed_.fetch_add(n, std::memory_order_relaxed);
      buffered_bytes_.fetch_sub(n, std::memory_order_relaxed);
      c->out_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c->error = n < 0 ? errno : EIO;  // EPIPE, ECONNRESET...: it is broken
    return false;
  }
  const size_t held = c->out.size() - c->out_off;
  if (held == 0) {
    c->out.clear();
    c->out_off = 0;
    if (c->out.capacity() > kKeptCapacity) std::string().swap(c->out);
  }
  // Half the bound, not the bound itself: reading then refills a buffer
  // in one go instead of toggling EPOLLIN for every few bytes written.
  if (!c->reading && !c->read_eof &&
      held <= static_cast<size_t>(options_.max_buffered_bytes) / 2) {
    c->reading = true;
  }
  return true;
}

void EchoServer::UpdateInterest(Conn* c) {
  // Not reading (at EOF, or at the buffer bound), EPOLLIN and EPOLLRDHUP
  // are left out: level-triggered, they would be reported again at once
  // and spin the loop. `want` is never empty for an open connection: not
  // reading means at EOF with echo pending (none pending closes), or above
  // half the bound.
  uint32_t want = c->reading ? EPOLLIN | EPOLLRDHUP : 0u;
  if (c->out.size() > c->out_off) want |= EPOLLOUT;
  if (want == c->interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.ptr = c;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  c->interest = want;
}

void EchoServer::CloseAll(CloseReason reason) {
  std::vector<Conn*> all;
  for (auto& [fd, c] : conns_) all.push_back(c.get());
  for (Conn* c : all) Close(c, reason);
}

void EchoServer::Close(Conn* c, CloseReason reason) {
  // First: after this, on_idle is over or will never run, so it cannot
  // shutdown() a descriptor number that close() below frees for reuse.
  c->idle.unregister();
  if (c->idle_fired.load(std::memory_order_acquire))
    reason = CloseReason::kIdle;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  close(c->fd);
  const auto unsent = static_cast<int64_t>(c->out.size() - c->out_off);
  buffered_bytes_.fetch_sub(unsent, std::memory_order_relaxed);
  std::atomic<int64_t>* counter = &closed_by_peer_;
  switch (reason) {
    case CloseReason::kPeer:
      break;
    case CloseReason::kIdle:
      counter = &closed_idle_;
      break;
    case CloseReason::kShutdown:
      counter = &closed_at_shutdown_;
      break;
    case CloseReason::kError:
      counter = &closed_on_error_;
      break;
  }
  counter->fetch_add(1, std::memory_order_relaxed);
  if (options_.on_close) {
    CloseEvent e;
    e.id = c->id;
    e.peer = c->peer;
    e.reason = reason;
    e.error = reason == CloseReason::kError ? c->error : 0;
    e.bytes_read = c->bytes_read;
    e.bytes_echoed = c->bytes_echoed;
    e.bytes_unsent = unsent;
    e.read_eof = c->read_eof;
    e.lifetime = absl::Now() - c->accepted_at;
    options_.on_close(e);
  }
  conns_.erase(c->fd);  // destroys c (its handle is already unregistered)
}

}  // namespace tickwheel::tools
