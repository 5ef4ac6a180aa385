#include "tickwheel/durable/redis_session.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "absl/status/statusor.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::internal {

absl::Status ReplyErrorStatus(const RedisReply& reply, std::string_view what,
                              const RedisEndpoint& endpoint) {
  const std::string where = endpoint.ToString();
  for (const std::string_view code :
       {"LOADING", "READONLY", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN",
        "NOSCRIPT"}) {
    if (reply.IsErrorCode(code)) {
      return absl::UnavailableError(fmt::format(
          "Redis at {} cannot serve {} now: {}; retry later{}", where, what,
          reply.str,
          code == "READONLY" ? " (this is a replica: point "
                               "DurableTimerOptions::redis at the primary)"
                             : ""));
    }
  }
  if (reply.IsErrorCode("OOM")) {
    return absl::ResourceExhaustedError(fmt::format(
        "Redis at {} refused {}: {}; raise maxmemory or free memory (use "
        "maxmemory-policy noeviction for durable timers)",
        where, what, reply.str));
  }
  if (reply.IsErrorCode("NOPERM")) {
    return absl::PermissionDeniedError(fmt::format(
        "Redis at {} refused {}: {}; grant the ACL user of "
        "DurableTimerOptions::username the commands and keys durable timers "
        "use (docs/DURABLE.md)",
        where, what, reply.str));
  }
  if (reply.IsErrorCode("NOAUTH") || reply.IsErrorCode("WRONGPASS")) {
    return absl::PermissionDeniedError(fmt::format(
        "Redis at {} refused {}: {}; set DurableTimerOptions::password (and "
        "username, for an ACL user)",
        where, what, reply.str));
  }
  if (reply.IsErrorCode("WRONGTYPE")) {
    return absl::FailedPreconditionError(fmt::format(
        "Redis at {}: {}: {}; the keyspace's keys hold other data, use "
        "another DurableTimerOptions::keyspace",
        where, what, reply.str));
  }
  if (reply.IsErrorCode("MOVED") || reply.IsErrorCode("ASK") ||
      reply.IsErrorCode("CROSSSLOT")) {
    return absl::FailedPreconditionError(fmt::format(
        "Redis at {}: {}: {}; this is a Redis Cluster: name its nodes in "
        "DurableTimerOptions::cluster_nodes rather than redis "
        "(docs/DURABLE.md)",
        where, what, reply.str));
  }
  return absl::InternalError(
      fmt::format("Redis at {}: {} failed: {}", where, what, reply.str));
}

absl::Status RedisSession::Failed(absl::Status status) {
  counters_->errors.fetch_add(1, std::memory_order_relaxed);
  conn_.reset();
  ever_failed_ = true;
  return status;
}

absl::Status RedisSession::Connect(int64_t deadline_nanos) {
  if (cluster()) {
    if (connected()) return absl::OkStatus();
    return RefreshSlots(deadline_nanos);
  }
  if (conn_ != nullptr && conn_->ClosedByPeer()) {
    ever_failed_ = true;  // lost while idle: connecting again counts
  }
  if (connected()) return absl::OkStatus();
  conn_.reset();
  absl::StatusOr<std::unique_ptr<RedisConnection>> conn =
      RedisConnection::Open(options_->endpoint, options_->username,
                            options_->password, deadline_nanos);
  if (!conn.ok()) return Failed(conn.status());
  conn_ = *std::move(conn);
  if (absl::Status s = LoadScripts(conn_.get(), deadline_nanos); !s.ok()) {
    return Failed(std::move(s));
  }
  if (ever_failed_) {
    counters_->reconnects.fetch_add(1, std::memory_order_relaxed);
    ever_failed_ = false;
  }
  return absl::OkStatus();
}

absl::Status RedisSession::LoadScripts(RedisConnection* conn,
                                       int64_t deadline_nanos) {
  std::vector<RedisCommand> load;
  for (int i = 0; i < kScriptCount; ++i) {
    load.push_back(
        {"SCRIPT", "LOAD", std::string(ScriptSource(static_cast<Script>(i)))});
  }
  std::vector<RedisReply> replies;
  if (absl::Status s = conn->Pipeline(load, &replies, deadline_nanos);
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < kScriptCount; ++i) {
    const auto script = static_cast<Script>(i);
    if (replies[i].is_error()) {
      return ReplyErrorStatus(replies[i],
                              fmt::format("SCRIPT LOAD {}", ScriptName(script)),
                              conn->endpoint());
    }
    if (replies[i].str != ScriptSha(script)) {
      return absl::InternalError(
          fmt::format("Redis at {} named script {} {}, expected {}",
                      conn->endpoint().ToString(), ScriptName(script),
                      replies[i].str, ScriptSha(script)));
    }
  }
  return absl::OkStatus();
}

RedisCommand RedisSession::WaitCommand() const {
  return {"WAIT", std::to_string(options_->min_replicas_acked),
          std::to_string(wait_timeout_ms_)};
}

absl::Status RedisSession::Run(std::span<const RedisCommand> commands,
                               std::vector<RedisReply>* replies,
                               int64_t deadline_nanos, ReplicaAck* ack) {
  const bool wait = WantWait(ack);
  if (wait) {
    wait_timeout_ms_ = ack->timeout_ms > 0 ? ack->timeout_ms
                                           : options_->replica_ack_timeout_ms;
    deadline_nanos += wait_timeout_ms_ * 1'000'000;
  }
  if (cluster()) return RunCluster(commands, replies, deadline_nanos, ack);
  if (absl::Status s = Connect(deadline_nanos); !s.ok()) return s;
  std::vector<RedisCommand> waited;
  if (wait) {
    waited.assign(commands.begin(), commands.end());
    waited.push_back(WaitCommand());
  }
  if (absl::Status s = conn_->Pipeline(
          wait ? std::span<const RedisCommand>(waited) : commands, replies,
          deadline_nanos);
      !s.ok()) {
    return Failed(std::move(s));
  }
  if (wait) {
    ack->Add(WaitCount(replies->back()), conn_->endpoint());
    replies->pop_back();
  }
  // NOSCRIPT: the script cache was emptied (SCRIPT FLUSH) while this
  // connection stayed up. Load the scripts and run those commands again;
  // a command that got NOSCRIPT did not run.
  std::vector<size_t> again;
  for (size_t i = 0; i < replies->size(); ++i) {
    if ((*replies)[i].IsErrorCode("NOSCRIPT")) again.push_back(i);
  }
  if (again.empty()) return absl::OkStatus();
  if (absl::Status s = LoadScripts(conn_.get(), deadline_nanos); !s.ok()) {
    return Failed(std::move(s));
  }
  std::vector<RedisCommand> retry;
  for (const size_t i : again) retry.push_back(commands[i]);
  if (wait) retry.push_back(WaitCommand());
  std::vector<RedisReply> retried;
  if (absl::Status s = conn_->Pipeline(retry, &retried, deadline_nanos);
      !s.ok()) {
    return Failed(std::move(s));
  }
  if (wait) {
    // This WAIT covers every write of the connection, the first
    // pipeline's too: its count is the one that holds.
    ack->waited = false;
    ack->Add(WaitCount(retried.back()), conn_->endpoint());
    retried.pop_back();
  }
  for (size_t k = 0; k < again.size(); ++k) {
    (*replies)[again[k]] = std::move(retried[k]);
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionPool::Lease> SessionPool::Acquire(
    int64_t deadline_nanos) {
  MutexLock lock(&mu_);
  for (;;) {
    if (!idle_.empty()) {
      std::unique_ptr<RedisSession> s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(s));
    }
    if (created_ < kMaxSessions) {
      ++created_;
      return Lease(this, std::make_unique<RedisSession>(options_, counters_));
    }
    const int64_t left = deadline_nanos - RealClock::MonotonicNanos();
    if (left <= 0) {
      return absl::UnavailableError(fmt::format(
          "all {} connections to Redis at {} stayed busy for redis_timeout; "
          "retry later",
          kMaxSessions, options_->endpoint.ToString()));
    }
    returned_.wait_for(mu_, std::chrono::nanoseconds(left));
  }
}

void SessionPool::Return(std::unique_ptr<RedisSession> session) {
  {
    MutexLock lock(&mu_);
    idle_.push_back(std::move(session));
  }
  returned_.notify_one();
}

}  // namespace tickwheel::durable::internal
