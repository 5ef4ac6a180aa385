#include "tickwheel/durable/redis_connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::internal {
namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

timeval TimevalFromNanos(int64_t nanos) {
  nanos = std::max<int64_t>(nanos, kNanosPerMilli);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(nanos / 1'000'000'000);
  tv.tv_usec = static_cast<suseconds_t>((nanos % 1'000'000'000) / 1000);
  return tv;
}

absl::Status BadUri(std::string_view uri, std::string_view why) {
  return absl::InvalidArgumentError(fmt::format(
      "DurableTimerOptions::redis \"{}\": {}; use \"tcp://host:port\" or "
      "\"unix:///path/to/redis.sock\"",
      uri, why));
}

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) {
        out.elements.push_back(Convert(r->element[i]));
      }
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

}  // namespace

std::string RedisEndpoint::ToString() const {
  if (!unix_path.empty()) return "unix://" + unix_path;
  if (host.find(':') != std::string::npos) {
    return fmt::format("tcp://[{}]:{}", host, port);
  }
  return fmt::format("tcp://{}:{}", host, port);
}

absl::StatusOr<RedisEndpoint> ParseRedisUri(std::string_view uri) {
  RedisEndpoint e;
  if (uri.starts_with("unix://")) {
    e.unix_path = std::string(uri.substr(7));
    if (e.unix_path.empty() || e.unix_path[0] != '/') {
      return BadUri(uri, "a unix socket needs an absolute path");
    }
    return e;
  }
  std::string_view rest;
  if (uri.starts_with("tcp://")) {
    rest = uri.substr(6);
  } else if (uri.starts_with("redis://")) {
    rest = uri.substr(8);
  } else {
    return BadUri(uri, "unknown scheme");
  }
  std::string_view port_text;
  if (rest.starts_with("[")) {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return BadUri(uri, "unclosed '['");
    e.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return BadUri(uri, "expected ':' after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) return BadUri(uri, "empty port");
    }
  } else {
    const size_t colon = rest.find(':');
    e.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) return BadUri(uri, "empty port");
    }
  }
  if (e.host.empty()) return BadUri(uri, "no host");
  if (e.host.find_first_of("/?#@ ") != std::string::npos) {
    return BadUri(uri, "the host may not hold '/', '?', '#', '@' or spaces");
  }
  e.port = 6379;
  if (!port_text.empty()) {
    int port = 0;
    const auto [end, ec] = std::from_chars(
        port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() ||
        port < 1 || port > 65535) {
      return BadUri(uri, "the port must be a number in [1, 65535]");
    }
    e.port = port;
  }
  return e;
}

bool RedisReply::IsErrorCode(std::string_view code) const {
  return type == Type::kError && std::string_view(str).starts_with(code) &&
         (str.size() == code.size() || str[code.size()] == ' ');
}

int64_t RedisReply::AsInt() const {
  if (type == Type::kInteger) return integer;
  if (type != Type::kString) return 0;
  int64_t v = 0;
  std::from_chars(str.data(), str.data() + str.size(), v);
  return v;
}

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Open(
    const RedisEndpoint& endpoint, const std::string& username,
    const std::string& password, int64_t deadline_nanos) {
  const int64_t left = deadline_nanos - RealClock::MonotonicNanos();
  if (left <= 0) {
    return absl::UnavailableError(
        fmt::format("Redis at {}: no time left to connect (redis_timeout)",
                    endpoint.ToString()));
  }
  const timeval tv = TimevalFromNanos(left);
  redisContext* c =
      endpoint.unix_path.empty()
          ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, tv)
          : redisConnectUnixWithTimeout(endpoint.unix_path.c_str(), tv);
  if (c == nullptr) {
    return absl::UnavailableError(fmt::format(
        "Redis at {}: cannot allocate a connection", endpoint.ToString()));
  }
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    return absl::UnavailableError(fmt::format(
        "Redis at {} is not reachable: {}; is redis-server running there? "
        "(the call may be retried)",
        endpoint.ToString(), why));
  }
  std::unique_ptr<RedisConnection> conn(new RedisConnection(c, endpoint));
  if (!conn->SetTimeoutUntil(deadline_nanos)) {
    return absl::UnavailableError(
        fmt::format("Redis at {}: connecting took the whole redis_timeout",
                    endpoint.ToString()));
  }
  if (!username.empty() || !password.empty()) {
    const RedisCommand auth = username.empty()
                                  ? RedisCommand{"AUTH", password}
                                  : RedisCommand{"AUTH", username, password};
    std::vector<RedisReply> replies;
    if (absl::Status s = conn->Pipeline({&auth, 1}, &replies, deadline_nanos);
        !s.ok()) {
      return s;
    }
    if (replies[0].is_error()) {
      return absl::PermissionDeniedError(fmt::format(
          "Redis at {} refused AUTH{}: {}; check DurableTimerOptions::{}",
          endpoint.ToString(),
          username.empty() ? "" : fmt::format(" as user \"{}\"", username),
          replies[0].str,
          username.empty() ? "password (and username, for an ACL user)"
                           : "username and password"));
    }
  }
  return conn;
}

RedisConnection::~RedisConnection() { redisFree(context_); }

bool RedisConnection::ClosedByPeer() {
  if (broken_) return true;
  pollfd p{context_->fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;  // nothing to read: alive
  // Readable while no reply is due: end of stream, an error, or bytes that
  // answer nothing. Either way the connection cannot be used.
  char byte;
  const ssize_t n = recv(context_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  broken_ = true;
  return true;
}

bool RedisConnection::SetTimeoutUntil(int64_t deadline_nanos) {
  const int64_t left = deadline_nanos - RealClock::MonotonicNanos();
  if (left <= 0) return false;
  return redisSetTimeout(context_, TimevalFromNanos(left)) == REDIS_OK;
}

absl::Status RedisConnection::Fail(std::string_view what) {
  broken_ = true;
  std::string why = context_->err != 0 ? context_->errstr : "";
  if (why.find("temporarily unavailable") != std::string::npos) {
    why = "no reply within redis_timeout";
  }
  return absl::UnavailableError(fmt::format("Redis at {}: {}{}{}",
                                            endpoint_.ToString(), what,
                                            why.empty() ? "" : ": ", why));
}

absl::Status RedisConnection::Pipeline(std::span<const RedisCommand> commands,
                                       std::vector<RedisReply>* replies,
                                       int64_t deadline_nanos) {
  replies->clear();
  if (absl::Status s = Send(commands, deadline_nanos); !s.ok()) return s;
  return Receive(commands.size(), replies, deadline_nanos);
}

absl::Status RedisConnection::Send(std::span<const RedisCommand> commands,
                                   int64_t deadline_nanos) {
  if (broken_) return Fail("connection already failed");
  std::vector<const char*> argv;
  std::vector<size_t> argvlen;
  for (const RedisCommand& cmd : commands) {
    argv.clear();
    argvlen.clear();
    for (const std::string& arg : cmd) {
      argv.push_back(arg.data());
      argvlen.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()),
                               argv.data(), argvlen.data()) != REDIS_OK) {
      return Fail("cannot queue a command");
    }
  }
  // Write it all out now (redisGetReply() would, but only when the
  // replies are read).
  for (int done = 0; done == 0;) {
    if (!SetTimeoutUntil(deadline_nanos)) {
      return Fail("no reply within redis_timeout");
    }
    if (redisBufferWrite(context_, &done) != REDIS_OK) {
      return Fail("the connection failed");
    }
  }
  return absl::OkStatus();
}

absl::Status RedisConnection::Receive(size_t count,
                                      std::vector<RedisReply>* replies,
                                      int64_t deadline_nanos) {
  replies->clear();
  if (broken_) return Fail("connection already failed");
  replies->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!SetTimeoutUntil(deadline_nanos)) {
      return Fail("no reply within redis_timeout");
    }
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      return Fail("the connection failed");
    }
    replies->push_back(Convert(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return absl::OkStatus();
}

}  // namespace tickwheel::durable::internal
