#include "tickwheel/durable/hint_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/log.h"

namespace tickwheel::durable::internal {
namespace {

int64_t Now() { return RealClock::MonotonicNanos(); }

// Reconnects back off from this, doubling up to the cap, as the poller's
// round trips do.
constexpr int64_t kFirstBackoffNanos = 25'000'000;
constexpr int64_t kMaxBackoffNanos = 1'000'000'000;

bool ParseInt(std::string_view text, int64_t* out) {
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<Hint> ParseHint(std::string_view message, int shards) {
  const size_t space = message.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  int64_t shard = 0;
  int64_t due = 0;
  if (!ParseInt(message.substr(0, space), &shard) ||
      !ParseInt(message.substr(space + 1), &due) || shard < 0 ||
      shard >= shards || due < 0) {
    return std::nullopt;
  }
  return Hint{static_cast<int>(shard), due};
}

HintListener::HintListener(const SessionOptions* session, std::string channel,
                           int shards, Callbacks callbacks)
    : session_(session),
      channel_(std::move(channel)),
      shards_(shards),
      callbacks_(std::move(callbacks)) {}

HintListener::~HintListener() { Stop(); }

absl::Status HintListener::Start() {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    wake_[0] = wake_[1] = -1;
    return absl::ResourceExhaustedError(
        "cannot create the durable timer's hint listener (pipe)");
  }
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error& e) {
    close(wake_[0]);
    close(wake_[1]);
    wake_[0] = wake_[1] = -1;
    return absl::ResourceExhaustedError(fmt::format(
        "cannot start the durable timer's hint listener: {}", e.what()));
  }
  return absl::OkStatus();
}

void HintListener::Stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  const char byte = 1;
  (void)!write(wake_[1], &byte, 1);
  thread_.join();
  close(wake_[0]);
  close(wake_[1]);
  wake_[0] = wake_[1] = -1;
}

bool HintListener::Pause(int64_t nanos) {
  pollfd p{wake_[0], POLLIN, 0};
  (void)poll(&p, 1, static_cast<int>(nanos / 1'000'000));
  return !stopping();
}

void HintListener::Loop() {
  pthread_setname_np(pthread_self(), "tw-durable-hint");
  // A Redis Cluster: its seeds in turn; else the one endpoint.
  std::vector<RedisEndpoint> endpoints = session_->cluster_seeds;
  if (endpoints.empty()) endpoints.push_back(session_->endpoint);
  size_t next = 0;
  int64_t backoff = 0;
  int failures = 0;
  while (!stopping()) {
    const RedisEndpoint& endpoint = endpoints[next % endpoints.size()];
    const absl::Status status = ListenOnce(endpoint);
    if (stopping()) return;
    if (status.ok()) {
      // It was subscribed, then lost the connection (logged): the back-off
      // starts over.
      backoff = kFirstBackoffNanos;
      failures = 0;
    } else {
      if (failures++ == 0) {
        const std::string grant =
            absl::IsPermissionDenied(status)
                ? fmt::format(" (the channel needs ACL &{} or &*)", channel_)
                : "";
        Log(LogSeverity::kWarning,
            fmt::format("durable timers: schedule hints from {}: {}{}; timers "
                        "that other processes schedule are found by polling "
                        "until the listener subscribes again",
                        endpoint.ToString(), std::string(status.message()),
                        grant));
      }
      backoff = std::clamp(backoff * 2, kFirstBackoffNanos, kMaxBackoffNanos);
    }
    ++next;
    if (!Pause(backoff)) return;
  }
}

absl::Status HintListener::ListenOnce(const RedisEndpoint& endpoint) {
  absl::StatusOr<std::unique_ptr<RedisConnection>> opened =
      RedisConnection::Open(endpoint, session_->username, session_->password,
                            Now() + session_->timeout_nanos);
  if (!opened.ok()) return opened.status();
  RedisConnection& conn = **opened;
  // SUBSCRIBE, and its confirmation read like any message, so that Stop()
  // does not wait for a Redis that does not answer.
  const int64_t deadline = Now() + session_->timeout_nanos;
  if (absl::Status s = conn.Send({"SUBSCRIBE", channel_}, deadline); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::optional<RedisReply>> confirmed =
      conn.Receive(deadline, wake_[0]);
  if (!confirmed.ok()) return confirmed.status();
  if (!confirmed->has_value()) {
    if (stopping()) return absl::OkStatus();
    return absl::UnavailableError(
        fmt::format("Redis at {}: no answer to SUBSCRIBE within redis_timeout",
                    endpoint.ToString()));
  }
  if ((*confirmed)->is_error()) {
    return ReplyErrorStatus(**confirmed, "SUBSCRIBE to the hint channel",
                            endpoint);
  }
  // Hints sent before this point were lost: look at every shard once.
  callbacks_.on_subscribed();
  int64_t quiet_since = Now();
  int64_t ping_sent = -1;  // awaiting a PONG since then; -1: none
  while (!stopping()) {
    const int64_t wait_until = ping_sent >= 0
                                   ? ping_sent + session_->timeout_nanos
                                   : quiet_since + kPingNanos;
    absl::StatusOr<std::optional<RedisReply>> got =
        conn.Receive(wait_until, wake_[0]);
    if (!got.ok()) {
      // Lost after it was subscribed: OK, so that the back-off starts over.
      Log(LogSeverity::kWarning,
          fmt::format("durable timers: the schedule hint listener lost {}: "
                      "{}; it reconnects, and looks at every shard then",
                      endpoint.ToString(),
                      std::string(got.status().message())));
      return absl::OkStatus();
    }
    const int64_t now = Now();
    if (got->has_value()) {
      bool pong = false;
      Dispatch(**got, &pong);
      if (pong) ping_sent = -1;
      quiet_since = now;
      continue;
    }
    if (stopping()) break;
    if (ping_sent >= 0 && now >= ping_sent + session_->timeout_nanos) {
      Log(LogSeverity::kWarning,
          fmt::format("durable timers: the schedule hint listener got no "
                      "answer to PING from {} within redis_timeout; it "
                      "reconnects",
                      endpoint.ToString()));
      return absl::OkStatus();
    }
    if (ping_sent < 0 && now >= quiet_since + kPingNanos) {
      if (absl::Status s = conn.Send({"PING"}, now + session_->timeout_nanos);
          !s.ok()) {
        return absl::OkStatus();
      }
      ping_sent = now;
    }
  }
  return absl::OkStatus();
}

void HintListener::Dispatch(const RedisReply& reply, bool* pong) {
  // In subscribe mode (RESP2) a message is ["message", channel, payload]
  // and the answer to PING is ["pong", ""].
  if (reply.type != RedisReply::Type::kArray || reply.elements.empty()) return;
  const std::string& kind = reply.elements[0].str;
  if (kind == "pong") {
    *pong = true;
  } else if (kind == "message" && reply.elements.size() == 3) {
    if (std::optional<Hint> hint = ParseHint(reply.elements[2].str, shards_)) {
      callbacks_.on_hint(*hint);
    }
  }
}

}  // namespace tickwheel::durable::internal
