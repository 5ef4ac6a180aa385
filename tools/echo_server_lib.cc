#include "tools/echo_server_lib.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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

std::string PeerName(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return fmt::format("{}:{}", buf, ntohs(a.sin_port));
}

}  // namespace

struct EchoServer::Conn {
  int fd = -1;
  uint64_t id = 0;
  std::string peer;
  absl::Time accepted_at;
  std::string out;  // echo bytes not yet written
  int64_t bytes = 0;
  bool want_write = false;
  // Set by on_idle (tracker thread) before it shuts the socket down; read by
  // the loop after unregister(), which orders it after on_idle anyway.
  std::atomic<bool> idle_fired{false};
  IdleHandle idle;
};

EchoServer::EchoServer(IdleTracker* tracker, EchoServerOptions options)
    : tracker_(tracker), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<EchoServer>> EchoServer::Create(
    IdleTracker* tracker, EchoServerOptions options) {
  std::unique_ptr<EchoServer> s(new EchoServer(tracker, std::move(options)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(s->options_.port);
  if (inet_pton(AF_INET, s->options_.address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("not an IPv4 address: '{}'", s->options_.address));
  }
  s->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return Errno("socket");
  int one = 1;
  setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
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
  std::vector<Conn*> all;
  for (auto& [fd, c] : conns_) all.push_back(c.get());
  for (Conn* c : all) Close(c);
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
  s.bytes_echoed = bytes_echoed_.load(std::memory_order_relaxed);
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
        return absl::OkStatus();
      } else {
        // Each descriptor appears once per batch and only OnReadable()
        // closes, so `c` is alive here.
        Conn* c = static_cast<Conn*>(tag);
        if (events[i].events & EPOLLOUT) Flush(c);
        // EPOLLIN, EPOLLRDHUP, EPOLLHUP, EPOLLERR: a read tells which.
        if ((events[i].events & ~static_cast<uint32_t>(EPOLLOUT)) != 0) {
          OnReadable(c);
        }
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
    if (fd < 0) return;  // EAGAIN, or a transient error (EMFILE...): retry later
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
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      c->idle.unregister();
      close(fd);
      continue;
    }
    conns_[fd] = std::move(conn);
    accepted_.fetch_add(1, std::memory_order_relaxed);
  }
}

void EchoServer::OnReadable(Conn* c) {
  char buf[16384];
  for (;;) {
    const ssize_t n = read(c->fd, buf, sizeof(buf));
    if (n > 0) {
      c->idle.touch();
      c->out.append(buf, static_cast<size_t>(n));
      if (c->out.size() > (1u << 20)) break;  // let the peer read first
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    Close(c);  // EOF (the peer, or our own shutdown from on_idle) or error
    return;
  }
  Flush(c);
}

void EchoServer::Flush(Conn* c) {
  while (!c->out.empty()) {
    const ssize_t n = send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c->bytes += n;
      bytes_echoed_.fetch_add(n, std::memory_order_relaxed);
      c->out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: wait for EPOLLOUT; an error shows up as EOF on read
  }
  const bool want = !c->out.empty();
  if (want != c->want_write) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u);
    ev.data.ptr = c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_write = want;
  }
}

void EchoServer::Close(Conn* c) {
  // First: after this, on_idle is over or will never run, so it cannot
  // shutdown() a descriptor number that close() below frees for reuse.
  c->idle.unregister();
  const bool idle = c->idle_fired.load(std::memory_order_acquire);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  close(c->fd);
  (idle ? closed_idle_ : closed_by_peer_).fetch_add(1, std::memory_order_relaxed);
  if (options_.on_close) {
    CloseEvent e;
    e.id = c->id;
    e.peer = c->peer;
    e.idle = idle;
    e.bytes_echoed = c->bytes;
    e.lifetime = absl::Now() - c->accepted_at;
    options_.on_close(e);
  }
  conns_.erase(c->fd);  // destroys c (its handle is already unregistered)
}

}  // namespace tickwheel::tools
