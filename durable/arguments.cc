// The checks and conversions of DurableTimer's arguments (timer_impl.h):
// options, ids, payloads, per-timer options, deadlines and delays.

#include <unistd.h>

#include <random>
#include <string>

#include <fmt/format.h>

#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/timer_impl.h"

namespace tickwheel::durable::internal {
namespace {

constexpr size_t kMaxIdBytes = 512;
constexpr size_t kMaxPayloadBytes = 512 * 1024;
constexpr int kMaxAttempts = 1'000'000;
constexpr int kMaxReplicasAcked = 100;

bool PositiveFinite(absl::Duration d) {
  return d > absl::ZeroDuration() && d != absl::InfiniteDuration();
}

}  // namespace

absl::Status CheckOptions(const DurableTimerOptions& o) {
  auto bad = [](std::string_view what, absl::Duration d) {
    return absl::InvalidArgumentError(
        fmt::format("DurableTimerOptions::{} must be > 0 and finite, got {}",
                    what, absl::FormatDuration(d)));
  };
  if (o.shards < 1 || o.shards > kMaxShards) {
    return absl::InvalidArgumentError(
        fmt::format("DurableTimerOptions::shards must be in [1, {}], got {}",
                    kMaxShards, o.shards));
  }
  if (!PositiveFinite(o.lease)) return bad("lease", o.lease);
  if (o.lease < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(
        fmt::format("DurableTimerOptions::lease must be at least 1ms, got {}",
                    absl::FormatDuration(o.lease)));
  }
  if (!PositiveFinite(o.poll_interval)) {
    return bad("poll_interval", o.poll_interval);
  }
  if (!PositiveFinite(o.redis_timeout)) {
    return bad("redis_timeout", o.redis_timeout);
  }
  if (o.max_cluster_redirects < 1 || o.max_cluster_redirects > 100) {
    return absl::InvalidArgumentError(fmt::format(
        "DurableTimerOptions::max_cluster_redirects must be in [1, 100], "
        "got {}",
        o.max_cluster_redirects));
  }
  if (o.min_replicas_acked < 0 || o.min_replicas_acked > kMaxReplicasAcked) {
    return absl::InvalidArgumentError(fmt::format(
        "DurableTimerOptions::min_replicas_acked must be in [0, {}] (0: no "
        "WAIT), got {}",
        kMaxReplicasAcked, o.min_replicas_acked));
  }
  if (!PositiveFinite(o.replica_ack_timeout)) {
    return bad("replica_ack_timeout", o.replica_ack_timeout);
  }
  if (o.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        fmt::format("DurableTimerOptions::max_in_flight must be >= 1, got {}",
                    o.max_in_flight));
  }
  if (o.handler_threads < 0 || o.handler_threads > 4096) {
    return absl::InvalidArgumentError(fmt::format(
        "DurableTimerOptions::handler_threads must be in [0, 4096] (0: {}), "
        "got {}",
        kDefaultHandlerThreads, o.handler_threads));
  }
  if (o.max_attempts < 0 || o.max_attempts > kMaxAttempts) {
    return absl::InvalidArgumentError(fmt::format(
        "DurableTimerOptions::max_attempts must be in [0, {}] (0: no limit), "
        "got {}",
        kMaxAttempts, o.max_attempts));
  }
  if (o.dead_letter_retention <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("DurableTimerOptions::dead_letter_retention must be > 0 "
                    "(InfiniteDuration: kept until purged), got {}",
                    absl::FormatDuration(o.dead_letter_retention)));
  }
  if (o.retry_backoff < absl::ZeroDuration() ||
      o.max_retry_backoff < absl::ZeroDuration() ||
      o.retry_backoff == absl::InfiniteDuration() ||
      o.max_retry_backoff == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        "DurableTimerOptions::retry_backoff and max_retry_backoff must be "
        ">= 0 and finite");
  }
  return CheckKeyspace(o.keyspace);
}

absl::Status CheckId(std::string_view id) {
  if (id.empty()) {
    return absl::InvalidArgumentError("a durable timer's id may not be empty");
  }
  if (id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "a durable timer's id is {} bytes, more than the {} allowed; use a "
        "shorter key (a hash of a long one, say)",
        id.size(), kMaxIdBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckEntry(std::string_view id, std::string_view payload,
                        const TimerOptions& options) {
  if (absl::Status s = CheckId(id); !s.ok()) return s;
  if (payload.size() > kMaxPayloadBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "the payload of durable timer \"{}\" is {} bytes, more than the {} "
        "allowed (512 KiB); store large data elsewhere and put its key in "
        "the payload",
        id.substr(0, 64), payload.size(), kMaxPayloadBytes));
  }
  if (options.max_attempts &&
      (*options.max_attempts < 0 || *options.max_attempts > kMaxAttempts)) {
    return absl::InvalidArgumentError(fmt::format(
        "TimerOptions::max_attempts of durable timer \"{}\" must be in [0, "
        "{}] (0: no limit), got {}",
        id.substr(0, 64), kMaxAttempts, *options.max_attempts));
  }
  return absl::OkStatus();
}

int64_t DeadlineMicros(absl::Time t) {
  if (t <= absl::UnixEpoch()) return 0;
  if (t >= absl::FromUnixMicros(kMaxDeadlineMicros)) {
    return kMaxDeadlineMicros;
  }
  int64_t us = absl::ToUnixMicros(t);
  if (absl::FromUnixMicros(us) < t) ++us;
  return us;
}

absl::Status WithAdvice(absl::Status s, std::string_view advice) {
  if (!absl::IsUnavailable(s)) return s;
  return absl::UnavailableError(
      fmt::format("{}; {}", std::string(s.message()), advice));
}

int64_t DelayMicros(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  if (d >= absl::Microseconds(kMaxDeadlineMicros)) {
    return kMaxDeadlineMicros;
  }
  return absl::ToInt64Microseconds(absl::Ceil(d, absl::Microseconds(1)));
}

std::string DefaultOwner() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device rd;
  return fmt::format("{}:{}:{:08x}", host[0] != '\0' ? host : "host", getpid(),
                     rd());
}

}  // namespace tickwheel::durable::internal

namespace tickwheel::durable {

absl::Status DurableTimer::Impl::Replicated(const internal::ReplicaAck& ack,
                                            std::string_view what,
                                            std::string_view advice) {
  if (!ack.short_of(options.min_replicas_acked)) return absl::OkStatus();
  return absl::UnavailableError(fmt::format(
      "{} is applied on the Redis master at {}, but only {} of the {} "
      "replicas DurableTimerOptions::min_replicas_acked asks for confirmed "
      "it within replica_ack_timeout ({}): it may not survive a failover; "
      "{}",
      what, ack.node.ToString(), ack.acked, options.min_replicas_acked,
      absl::FormatDuration(options.replica_ack_timeout), advice));
}

}  // namespace tickwheel::durable
