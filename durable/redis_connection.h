// durable/redis_connection.h
// -----------------------------------------------------------------------------
// Internal. One connection to Redis over hiredis (a C library), wrapped so
// that nothing else in durable/ touches a redisContext:
//
//   RedisEndpoint / ParseRedisUri   "tcp://host:port" or "unix:///path"
//   RedisReply                      a reply, copied out of hiredis
//   RedisConnection                 connect (with a deadline) and AUTH, then
//                                   pipelines: N commands in one write, N
//                                   replies read back, all before a deadline
//
// Deadlines are readings of RealClock::MonotonicNanos(): a wall clock that
// steps cannot stretch or cut a timeout.
//
// A RedisConnection is thread-compatible (hiredis is not thread-safe): one
// thread at a time, which the callers ensure with their own locks. After an
// I/O error, a timeout or a protocol error it is broken() for good; the
// caller opens a new one (RedisSession, durable/redis_session.h, does).

#ifndef TICKWHEEL_DURABLE_REDIS_CONNECTION_H_
#define TICKWHEEL_DURABLE_REDIS_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct redisContext;

namespace tickwheel::durable::internal {

// Where Redis listens: a TCP host and port, or a unix socket's path.
struct RedisEndpoint {
  std::string host;       // empty for a unix socket
  int port = 0;           // 1..65535 for TCP
  std::string unix_path;  // non-empty for a unix socket
  // "tcp://127.0.0.1:6379" or "unix:///path/redis.sock".
  std::string ToString() const;
};

// Accepts "tcp://host[:port]" (port 6379 when absent; an IPv6 host in
// brackets, "tcp://[::1]:6379"), "redis://host[:port]" as a synonym, and
// "unix:///absolute/path". InvalidArgument otherwise, naming the forms.
absl::StatusOr<RedisEndpoint> ParseRedisUri(std::string_view uri);

struct RedisReply {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;               // kInteger
  std::string str;                   // kString, kStatus, kError
  std::vector<RedisReply> elements;  // kArray

  bool is_error() const { return type == Type::kError; }
  // An error reply whose message starts with `code` ("NOSCRIPT", "OOM").
  bool IsErrorCode(std::string_view code) const;
  // kInteger, or a kString holding a decimal integer; 0 otherwise.
  int64_t AsInt() const;
};

// One command: its arguments, binary-safe ("EVALSHA", sha, "5", key, ...).
using RedisCommand = std::vector<std::string>;

class RedisConnection {
 public:
  // Connects, sets the socket timeouts and authenticates, all before
  // `deadline_nanos` (MonotonicNanos()): AUTH `username` `password` (an ACL
  // user, Redis 6 and later) when `username` is not empty, else AUTH
  // `password` (the default user) when `password` is not empty.
  // Unavailable: refused, unreachable or timed out. PermissionDenied: AUTH
  // was refused (with the server's message and what to check).
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Open(
      const RedisEndpoint& endpoint, const std::string& username,
      const std::string& password, int64_t deadline_nanos);

  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `commands` in one write and reads their replies into `replies`
  // (one each, in order; error replies are replies, not failures).
  // Unavailable when the connection fails or the deadline passes first; the
  // connection is then broken(), and the commands may or may not have run.
  // Each read waits at most until the deadline, so a call returns within
  // about the time left (a socket timeout is per system call).
  absl::Status Pipeline(std::span<const RedisCommand> commands,
                        std::vector<RedisReply>* replies,
                        int64_t deadline_nanos);
  // Pipeline() in two halves, so that one thread can have several
  // connections' commands run at once: Send() writes `commands` out,
  // Receive() reads `count` replies. Between them the connection holds
  // replies not read yet: a caller that does not Receive() them must drop
  // the connection. Errors as Pipeline()'s.
  absl::Status Send(std::span<const RedisCommand> commands,
                    int64_t deadline_nanos);
  absl::Status Receive(size_t count, std::vector<RedisReply>* replies,
                       int64_t deadline_nanos);

  bool broken() const { return broken_; }
  // Whether the server has closed this connection while it sat idle (a
  // restarted or killed Redis leaves a FIN behind): a zero-timeout poll(),
  // no round trip. Marks the connection broken when so. Call it only
  // between pipelines.
  bool ClosedByPeer();
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  RedisConnection(redisContext* context, RedisEndpoint endpoint)
      : context_(context), endpoint_(std::move(endpoint)) {}
  // Sets the socket's send and receive timeouts to the time left (at least
  // a millisecond). False when the deadline has passed.
  bool SetTimeoutUntil(int64_t deadline_nanos);
  absl::Status Fail(std::string_view what);

  redisContext* context_;
  RedisEndpoint endpoint_;
  bool broken_ = false;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_REDIS_CONNECTION_H_
