// tools/echo_server_lib.h
// -----------------------------------------------------------------------------
// A TCP echo server that closes idle connections with an IdleTracker: the
// library behind tools/echo_server and tests/echo_idle_test.
//
// One thread runs the I/O loop (Run()): plain POSIX sockets, non-blocking,
// level-triggered epoll. Each accepted connection is registered with the
// tracker; progress touch()es it: bytes read (and buffered for the echo) and
// bytes written back. Its on_idle runs on the tracker's worker thread and
// closes it.
//
// Back-pressure
//   Each connection buffers at most EchoServerOptions::max_buffered_bytes of
//   echo not yet written. At the bound the loop stops reading from that
//   client (EPOLLIN leaves the epoll interest set, so a level-triggered
//   EPOLLIN cannot spin the loop either) and only waits for EPOLLOUT;
//   reading resumes once the buffer has drained to half the bound. A client
//   that sends and never reads thus costs a bounded buffer (plus the
//   kernel's socket buffers), and since nothing is read or written for it,
//   nothing touch()es it: the idle timeout closes it.
//
// End of input
//   A client may half-close (shutdown(SHUT_WR), `nc -N`) and keep reading.
//   EOF therefore does not close at once: the loop stops reading, keeps
//   writing what it has read (waiting for EPOLLOUT when the socket is full),
//   and closes once all of it is written. A client that half-closes and then
//   stops reading makes no progress and is closed by the idle timeout.
//
// How on_idle closes a connection that the I/O thread owns
//   on_idle does not close(2) the descriptor, which the loop may be using. It
//   marks the connection idle (release store) and calls shutdown(fd,
//   SHUT_RDWR), which is safe from any thread: the peer gets a FIN (after
//   whatever the socket still holds for it), and epoll reports EPOLLHUP, which
//   it reports whatever the interest set, so the loop wakes up even for a
//   connection it is not reading. Its next read returns 0 or its next write
//   fails (EPIPE), and the loop closes the connection on its own thread. The
//   descriptor cannot have been closed and reused by a new connection under
//   on_idle's feet, because the loop always calls handle.unregister() before
//   close(fd), and unregister() returns only once on_idle has returned or can
//   never run (timer/idle_tracker.h). Posting the close to the loop through an
//   eventfd would work as well; shutdown(2) needs no queue and no lookup.
//
// EchoServer is thread-compatible except for Stop() and stats(), which are
// thread-safe (Stop() is also async-signal-safe).

#ifndef TICKWHEEL_TOOLS_ECHO_SERVER_LIB_H_
#define TICKWHEEL_TOOLS_ECHO_SERVER_LIB_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/idle_tracker.h"

namespace tickwheel::tools {

// Why the server closed a connection.
enum class CloseReason {
  kPeer,      // the client closed (EOF), and all its echo was written
  kIdle,      // on_idle fired: no progress for the idle timeout. Takes
              // precedence: a connection whose on_idle fired is reported
              // idle whatever the loop saw next (its own shutdown's EOF or
              // EPIPE, or the server stopping)
  kShutdown,  // the server stopped: Run() returning after Stop(), or the
              // destructor
  kError,     // a socket error on read or write: ECONNRESET (the client
              // reset the connection, as the kernel does when a socket is
              // closed with data still unread), EPIPE...
};

// "peer", "idle", "shutdown", "error". Thread-safe.
const char* CloseReasonName(CloseReason reason);

// Reported once per closed connection, on the thread that closes it (Run()'s,
// or the destructor's).
struct CloseEvent {
  uint64_t id = 0;   // 1, 2, ... in accept order
  std::string peer;  // "127.0.0.1:54321"
  CloseReason reason = CloseReason::kPeer;
  int error = 0;  // for kError: the errno of the failed call
  int64_t bytes_read = 0;
  int64_t bytes_echoed = 0;
  int64_t bytes_unsent = 0;  // read but not echoed when closed
  // Reading had ended with EOF: the client half-closed (or, for an idle
  // close, on_idle's own shutdown ended it).
  bool read_eof = false;
  absl::Duration lifetime;  // accept to close
};

struct EchoServerOptions {
  // IPv4 address to listen on; the tests and the default use loopback only.
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port (see EchoServer::port())
  // Per-connection idle timeout; zero means the tracker's default.
  absl::Duration idle_timeout = absl::ZeroDuration();
  // The most echo bytes one connection may hold in user space (read, not
  // yet written); reading from that client pauses at this bound. Must be
  // > 0 (Create() returns InvalidArgument otherwise).
  int64_t max_buffered_bytes = int64_t{1} << 20;
  // Called once per closed connection, on the closing thread (see
  // CloseEvent), after the descriptor is closed. It runs inside the I/O
  // loop, so it must not block: no I/O that can wait (a terminal or pipe
  // that is not read), no lock held for long (tools/echo_server logs
  // through a LineLogger, tools/line_logger.h).
  std::function<void(const CloseEvent&)> on_close;
};

struct EchoServerStats {
  int64_t accepted = 0;
  // Closed connections by CloseReason.
  int64_t closed_idle = 0;         // kIdle
  int64_t closed_by_peer = 0;      // kPeer
  int64_t closed_at_shutdown = 0;  // kShutdown
  int64_t closed_on_error = 0;     // kError
  int64_t bytes_echoed = 0;
  int64_t buffered_bytes = 0;      // echo held now, all connections together
  int64_t max_buffered_bytes = 0;  // the most one connection ever held
};

class EchoServer {
 public:
  // Binds and listens, and calls tracker->Activate() (undone by the
  // destructor). `tracker` must outlive the server.
  // InvalidArgument: address not IPv4, max_buffered_bytes <= 0. Internal:
  // a socket call failed (the message names it). Errors from Activate().
  static absl::StatusOr<std::unique_ptr<EchoServer>> Create(
      IdleTracker* tracker, EchoServerOptions options);
  // Closes every connection still open (unregister, then close; reported
  // as kShutdown) and Deactivate()s the tracker. Must not run concurrently
  // with Run().
  ~EchoServer();

  uint16_t port() const { return port_; }

  // The I/O loop, on the calling thread, until Stop(). On Stop() it closes
  // every open connection (kShutdown), so that stats() count them, and
  // returns OK. Internal: epoll_wait failed (connections stay open until
  // the destructor).
  absl::Status Run();
  // Makes Run() return soon. Thread-safe and async-signal-safe.
  void Stop();

  EchoServerStats stats() const;

 private:
  struct Conn;
  EchoServer(IdleTracker* tracker, EchoServerOptions options);
  void AcceptAll();
  // Serves one connection that epoll reported: writes pending echo, reads,
  // echoes, and closes on EOF (once the echo is written) or error.
  void OnEvents(Conn* c);
  // Read (up to the buffer bound) and write as much as the socket allows
  // without blocking; false on a socket error, whose errno is kept in the
  // connection. Flush() also resumes reading once the buffer has drained to
  // half the bound.
  bool ReadSome(Conn* c);
  bool Flush(Conn* c);
  // Registers EPOLLIN/EPOLLRDHUP while reading, EPOLLOUT while echo is
  // pending.
  void UpdateInterest(Conn* c);
  // Unregisters, closes, counts and reports `c` (kIdle instead of `reason`
  // if its on_idle fired), then destroys it.
  void Close(Conn* c, CloseReason reason);
  void CloseAll(CloseReason reason);

  IdleTracker* const tracker_;
  const EchoServerOptions options_;
  bool activated_ = false;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  uint16_t port_ = 0;
  uint64_t next_id_ = 1;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;  // I/O thread only

  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> closed_idle_{0};
  std::atomic<int64_t> closed_by_peer_{0};
  std::atomic<int64_t> closed_at_shutdown_{0};
  std::atomic<int64_t> closed_on_error_{0};
  std::atomic<int64_t> bytes_echoed_{0};
  std::atomic<int64_t> buffered_bytes_{0};
  std::atomic<int64_t> max_buffered_bytes_{0};  // written by the loop only
};

}  // namespace tickwheel::tools

#endif  // TICKWHEEL_TOOLS_ECHO_SERVER_LIB_H_
