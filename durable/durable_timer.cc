#include "tickwheel/durable/durable_timer.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/counters.h"
#include "tickwheel/durable/delivery.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_session.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/shard_ops.h"
#include "tickwheel/durable/timer_impl.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable {

using internal::CheckEntry;
using internal::CheckId;
using internal::DeadlineMicros;
using internal::DelayMicros;
using internal::Delivery;
using internal::MutexLock;
using internal::RedisCommand;
using internal::RedisReply;
using internal::WithAdvice;

namespace {

// ScheduleMany()'s round trip: MULTI, one script call per shard (and per
// kMaxScriptBatch entries), EXEC, applied together; on a Redis Cluster
// (`per_shard`) one MULTI ... EXEC per shard, as a transaction may not span
// slots. EVAL with the source rather than EVALSHA: inside a transaction a
// missing script would fail its own command while the others ran.
// `earliest` gets each shard's first deadline.
std::vector<RedisCommand> ScheduleManyCommands(
    const std::vector<internal::ShardKeys>& keys, int64_t hint_window_us,
    std::string_view hint_channel,
    const std::map<int, std::vector<internal::ScheduleArgs>>& by_shard,
    bool per_shard, std::vector<std::pair<int, int64_t>>* earliest) {
  std::vector<RedisCommand> commands;
  commands.push_back({"MULTI"});
  for (const auto& [shard, args] : by_shard) {
    if (per_shard && commands.size() > 1) {
      commands.push_back({"EXEC"});
      commands.push_back({"MULTI"});
    }
    int64_t first = internal::kMaxDeadlineMicros;
    for (size_t i = 0; i < args.size(); i += internal::kMaxScriptBatch) {
      const size_t n = std::min(args.size() - i,
                                static_cast<size_t>(internal::kMaxScriptBatch));
      commands.push_back(internal::ScheduleCommand(
          keys[static_cast<size_t>(shard)], /*after=*/false,
          std::span(args).subspan(i, n), /*by_source=*/true,
          {shard, hint_window_us, hint_channel}));
    }
    for (const internal::ScheduleArgs& a : args) {
      first = std::min(first, a.time_us);
    }
    earliest->emplace_back(shard, first);
  }
  commands.push_back({"EXEC"});
  return commands;
}

}  // namespace

std::string DurableMetrics::ToString() const {
  return fmt::format(
      "scheduled={} delivered={} acknowledged={} redelivered={} "
      "handler_failures={} dead_lettered={} start_window_misses={} "
      "redis_errors={} reconnects={} redis_oom={} redis_full={} "
      "replica_shortfalls={} lateness=[{}]",
      scheduled, delivered, acknowledged, redelivered, handler_failures,
      dead_lettered, start_window_misses, redis_errors, reconnects, redis_oom,
      redis_full, replica_shortfalls, lateness.ToString());
}

DurableTimer::DurableTimer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

DurableTimer::~DurableTimer() { (void)Stop(); }

absl::StatusOr<std::unique_ptr<DurableTimer>> DurableTimer::Connect(
    DurableTimerOptions options) {
  if (absl::Status s = internal::CheckOptions(options); !s.ok()) return s;
  std::vector<internal::RedisEndpoint> seeds;
  for (const std::string& node : options.cluster_nodes) {
    absl::StatusOr<internal::RedisEndpoint> seed =
        internal::ParseHostPort(node);
    if (!seed.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("DurableTimerOptions::cluster_nodes: {}",
                      std::string(seed.status().message())));
    }
    seeds.push_back(*std::move(seed));
  }
  absl::StatusOr<internal::RedisEndpoint> endpoint =
      seeds.empty() ? internal::ParseRedisUri(options.redis)
                    : absl::StatusOr<internal::RedisEndpoint>(seeds[0]);
  if (!endpoint.ok()) return endpoint.status();
  if (options.owner.empty()) options.owner = internal::DefaultOwner();
  if (options.handler_threads == 0) {
    options.handler_threads = internal::kDefaultHandlerThreads;
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  const DurableTimerOptions& o = impl->options;
  impl->session_options.endpoint = *std::move(endpoint);
  impl->session_options.username = o.username;
  impl->session_options.password = o.password;
  impl->session_options.cluster_seeds = std::move(seeds);
  impl->session_options.max_redirects = o.max_cluster_redirects;
  impl->session_options.min_replicas_acked = o.min_replicas_acked;
  impl->session_options.replica_ack_timeout_ms = absl::ToInt64Milliseconds(
      absl::Ceil(o.replica_ack_timeout, absl::Milliseconds(1)));
  impl->timeout_nanos = absl::ToInt64Nanoseconds(o.redis_timeout);
  impl->session_options.timeout_nanos = impl->timeout_nanos;
  impl->keys = internal::MakeShardKeys(o.keyspace, o.shards);
  if (o.schedule_hints) {
    impl->hint_channel = internal::HintChannel(o.keyspace);
    impl->hint_window_us = absl::ToInt64Microseconds(o.poll_interval);
  }

  // Reach Redis and load the scripts, then record or check the shard count.
  const RedisCommand meta = {"EVALSHA",
                             internal::ScriptSha(internal::Script::kMeta),
                             "1",
                             internal::MetaKey(o.keyspace),
                             std::to_string(o.shards),
                             std::to_string(internal::kDataFormat)};
  // With min_replicas_acked, a write that changes nothing on every shard,
  // and WAIT on every master: a master short of replicas says so now
  // rather than at every write.
  std::vector<RedisCommand> commands = {meta};
  if (o.min_replicas_acked > 0) {
    for (int shard = 0; shard < o.shards; ++shard) {
      commands.push_back(impl->Barrier(shard));
    }
  }
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = impl->Call(commands, &replies, &ack); !s.ok()) {
    return s;
  }
  const RedisReply& r = replies[0];
  if (r.is_error()) return impl->ErrorReply(r, "recording the shard count");
  if (r.type != RedisReply::Type::kArray || r.elements.size() != 2) {
    return absl::InternalError("malformed reply to the meta script");
  }
  const int64_t recorded = r.elements[0].AsInt();
  const int64_t format = r.elements[1].AsInt();
  if (format != internal::kDataFormat) {
    return absl::FailedPreconditionError(fmt::format(
        "keyspace \"{}\" holds durable timers of data format {}, this library "
        "reads format {}; use another keyspace",
        o.keyspace, r.elements[1].str, internal::kDataFormat));
  }
  if (recorded != o.shards) {
    return absl::FailedPreconditionError(fmt::format(
        "keyspace \"{}\" was created with {} shards, and this process asks "
        "for {}; the count is fixed per keyspace: set "
        "DurableTimerOptions::shards = {} (or use another keyspace)",
        o.keyspace, recorded, o.shards, recorded));
  }
  if (ack.short_of(o.min_replicas_acked)) {
    return absl::FailedPreconditionError(fmt::format(
        "DurableTimerOptions::min_replicas_acked is {}, but only {} replicas "
        "of the Redis master at {} acknowledged a write within "
        "replica_ack_timeout ({}): it has fewer replicas, or they are down "
        "or lagging. Add replicas (replicaof), or set min_replicas_acked = "
        "0 to accept that a failover may lose the last writes",
        o.min_replicas_acked, ack.acked, ack.node.ToString(),
        absl::FormatDuration(o.replica_ack_timeout)));
  }
  return std::unique_ptr<DurableTimer>(new DurableTimer(std::move(impl)));
}

absl::Status DurableTimer::Schedule(std::string_view id, absl::Time deadline,
                                    std::string_view payload) {
  return Schedule(id, deadline, payload, TimerOptions());
}

absl::Status DurableTimer::ScheduleAfter(std::string_view id,
                                         absl::Duration delay,
                                         std::string_view payload) {
  return ScheduleAfter(id, delay, payload, TimerOptions());
}

absl::Status DurableTimer::Schedule(std::string_view id, absl::Time deadline,
                                    std::string_view payload,
                                    const TimerOptions& options) {
  if (absl::Status s = CheckEntry(id, payload, options); !s.ok()) return s;
  const int shard = internal::ShardOf(id, impl_->options.shards);
  const internal::ScheduleArgs args{
      id, DeadlineMicros(deadline), payload,
      options.max_attempts.value_or(impl_->options.max_attempts)};
  const RedisCommand cmd = internal::ScheduleCommand(
      impl_->keys[static_cast<size_t>(shard)], /*after=*/false, {&args, 1},
      /*by_source=*/false, impl_->Hint(shard));
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = impl_->Call({&cmd, 1}, &replies, &ack); !s.ok()) {
    return WithAdvice(std::move(s),
                      "the timer may or may not be scheduled: call Schedule() "
                      "again (it is idempotent)");
  }
  if (replies[0].is_error()) return impl_->ErrorReply(replies[0], "Schedule");
  impl_->Accepted();
  impl_->counters.Add(impl_->counters.scheduled);
  if (std::shared_ptr<Delivery> d = impl_->delivery_snapshot()) {
    d->Scheduled(shard, args.time_us);
  }
  return impl_->Replicated(
      ack, "Schedule()",
      "call Schedule() again with the same id (it is idempotent)");
}

absl::Status DurableTimer::ScheduleAfter(std::string_view id,
                                         absl::Duration delay,
                                         std::string_view payload,
                                         const TimerOptions& options) {
  if (absl::Status s = CheckEntry(id, payload, options); !s.ok()) return s;
  const int shard = internal::ShardOf(id, impl_->options.shards);
  const internal::ScheduleArgs args{
      id, DelayMicros(delay), payload,
      options.max_attempts.value_or(impl_->options.max_attempts)};
  const RedisCommand cmd = internal::ScheduleCommand(
      impl_->keys[static_cast<size_t>(shard)], /*after=*/true, {&args, 1},
      /*by_source=*/false, impl_->Hint(shard));
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = impl_->Call({&cmd, 1}, &replies, &ack); !s.ok()) {
    return WithAdvice(std::move(s),
                      "the timer may or may not be scheduled: call "
                      "ScheduleAfter() again (it replaces, so it is safe)");
  }
  const RedisReply& r = replies[0];
  if (r.is_error()) return impl_->ErrorReply(r, "ScheduleAfter");
  if (r.type != RedisReply::Type::kArray || r.elements.size() != 2) {
    return absl::InternalError("malformed reply to the schedule script");
  }
  impl_->Accepted();
  impl_->counters.Add(impl_->counters.scheduled);
  if (std::shared_ptr<Delivery> d = impl_->delivery_snapshot()) {
    d->Scheduled(shard, r.elements[1].AsInt());
  }
  return impl_->Replicated(ack, "ScheduleAfter()",
                           "call ScheduleAfter() again with the same id (it "
                           "replaces, so it is safe)");
}

absl::Status DurableTimer::ScheduleMany(
    std::span<const ScheduleEntry> entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (absl::Status s =
            CheckEntry(entries[i].id, entries[i].payload, entries[i].options);
        !s.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("ScheduleMany: entry {}: {}; nothing was scheduled", i,
                      std::string(s.message())));
    }
  }
  if (entries.empty()) return absl::OkStatus();
  const int shards = impl_->options.shards;
  std::map<int, std::vector<internal::ScheduleArgs>> by_shard;
  for (const ScheduleEntry& e : entries) {
    by_shard[internal::ShardOf(e.id, shards)].push_back(
        {e.id, DeadlineMicros(e.deadline), e.payload,
         e.options.max_attempts.value_or(impl_->options.max_attempts)});
  }
  std::vector<std::pair<int, int64_t>> earliest;  // shard, first deadline
  const std::vector<RedisCommand> commands = ScheduleManyCommands(
      impl_->keys, impl_->hint_window_us, impl_->hint_channel, by_shard,
      !impl_->session_options.cluster_seeds.empty(), &earliest);
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = impl_->Call(commands, &replies, &ack); !s.ok()) {
    return WithAdvice(std::move(s),
                      "all or none of the timers may be scheduled: call "
                      "ScheduleMany() again (it is idempotent)");
  }
  // One transaction, or one per shard on a cluster: each MULTI, its
  // queued commands, and the EXEC that applies them.
  size_t multi = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const RedisReply& r = replies[i];
    const std::string_view some =
        multi == 0 ? "nothing scheduled"
                   : "some shards may have been scheduled: call it again";
    if (commands[i][0] == "MULTI") multi = i;
    if (commands[i][0] != "EXEC") {
      if (r.is_error()) {  // queuing failed: EXEC discards the transaction
        return impl_->ErrorReply(r, fmt::format("ScheduleMany ({})", some));
      }
      continue;
    }
    if (r.is_error()) {
      return impl_->ErrorReply(r, fmt::format("ScheduleMany ({})", some));
    }
    if (r.type != RedisReply::Type::kArray ||
        r.elements.size() != i - multi - 1) {
      return absl::InternalError("ScheduleMany: malformed reply to EXEC");
    }
    for (const RedisReply& e : r.elements) {
      if (e.is_error()) {
        return impl_->ErrorReply(
            e,
            "ScheduleMany (some shards may have been scheduled: call it "
            "again)");
      }
    }
  }
  impl_->Accepted();
  impl_->counters.Add(impl_->counters.scheduled,
                      static_cast<int64_t>(entries.size()));
  if (std::shared_ptr<Delivery> d = impl_->delivery_snapshot()) {
    for (const auto& [shard, first] : earliest) d->Scheduled(shard, first);
  }
  return impl_->Replicated(
      ack, "ScheduleMany()",
      "call ScheduleMany() again with the same entries (it is idempotent)");
}

absl::StatusOr<bool> DurableTimer::Cancel(std::string_view id) {
  if (absl::Status s = CheckId(id); !s.ok()) return s;
  const int shard = internal::ShardOf(id, impl_->options.shards);
  std::vector<RedisCommand> commands = {
      internal::CancelCommand(impl_->keys[static_cast<size_t>(shard)], id)};
  if (impl_->options.min_replicas_acked > 0) {
    commands.push_back(impl_->Barrier(shard));
  }
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = impl_->Call(commands, &replies, &ack); !s.ok()) {
    return WithAdvice(std::move(s),
                      "the timer may or may not be cancelled: call Cancel() "
                      "again (false then means it was)");
  }
  if (replies[0].is_error()) return impl_->ErrorReply(replies[0], "Cancel");
  const bool cancelled = replies[0].AsInt() == 1;
  if (cancelled) {
    if (std::shared_ptr<Delivery> d = impl_->delivery_snapshot()) {
      d->Cancelled(id);
    }
  }
  if (absl::Status s = impl_->Replicated(
          ack, "Cancel()",
          "call Cancel() again (false then means it was cancelled)");
      !s.ok()) {
    return s;
  }
  return cancelled;
}

absl::Status DurableTimer::Start(
    std::function<absl::Status(const FiredTimer&)> handler) {
  if (!handler) {
    return absl::InvalidArgumentError("Start() needs a handler");
  }
  MutexLock lock(&impl_->mu);
  if (impl_->state == Impl::State::kStarted) {
    return absl::FailedPreconditionError(
        "Start() was called already; one handler per DurableTimer");
  }
  if (impl_->state == Impl::State::kStopped) {
    return absl::FailedPreconditionError(
        "Start() after Stop(): connect a new DurableTimer to deliver again");
  }
  const DurableTimerOptions& o = impl_->options;
  internal::DeliveryOptions d;
  d.keys = &impl_->keys;
  d.session = &impl_->session_options;
  d.owner = o.owner;
  d.lease_us = std::max<int64_t>(1, absl::ToInt64Microseconds(o.lease));
  d.poll_nanos =
      std::max<int64_t>(1000, absl::ToInt64Nanoseconds(o.poll_interval));
  // Claim ahead by a poll interval, so that a timer waits in the local
  // Timer rather than for the next poll; never more than half a lease, so
  // that a held timer is started well within its lease.
  d.lookahead_us =
      std::min(absl::ToInt64Microseconds(o.poll_interval), d.lease_us / 2);
  d.timeout_nanos = impl_->timeout_nanos;
  d.max_in_flight = o.max_in_flight;
  d.handler_threads = o.handler_threads;
  d.backoff_us = absl::ToInt64Microseconds(o.retry_backoff);
  d.max_backoff_us = absl::ToInt64Microseconds(o.max_retry_backoff);
  d.hint_channel = impl_->hint_channel;
  d.dead_retention_us =
      o.dead_letter_retention == absl::InfiniteDuration()
          ? 0
          : std::clamp<int64_t>(
                absl::ToInt64Microseconds(o.dead_letter_retention), 1,
                internal::kMaxDeadlineMicros);
  auto delivery = std::make_shared<Delivery>(
      std::move(d), &impl_->counters,
      [handler = std::move(handler)](internal::Delivered& in) {
        const FiredTimer fired{std::move(in.id), std::move(in.payload),
                               absl::FromUnixMicros(in.deadline_us),
                               in.attempt};
        return handler(fired);
      });
  if (absl::Status s = delivery->Start(); !s.ok()) return s;
  impl_->delivery = std::move(delivery);
  impl_->state = Impl::State::kStarted;
  return absl::OkStatus();
}

absl::Status DurableTimer::Stop() {
  std::shared_ptr<Delivery> delivery;
  {
    MutexLock lock(&impl_->mu);
    if (impl_->delivery != nullptr && impl_->delivery->InHandler()) {
      return absl::FailedPreconditionError(
          "Stop() from a handler would wait for that handler; call it from "
          "another thread");
    }
    impl_->state = Impl::State::kStopped;
    delivery = impl_->delivery;
  }
  // Without the lock: handlers may call Schedule() while Stop() waits.
  if (delivery != nullptr) delivery->Stop();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> DurableTimer::Pending() {
  // Per shard, HLEN :state then ZCARD :dead: the records less the dead
  // letters. Not in MULTI/EXEC: a full Redis refuses every command queued
  // in a transaction, and Pending() must answer there too.
  std::vector<RedisCommand> commands;
  commands.reserve(2 * impl_->keys.size());
  for (const internal::ShardKeys& k : impl_->keys) {
    commands.push_back({"HLEN", k.state});
    commands.push_back({"ZCARD", k.dead});
  }
  std::vector<RedisReply> replies;
  if (absl::Status s = impl_->Call(commands, &replies); !s.ok()) return s;
  int64_t total = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    if (replies[i].is_error()) return impl_->ErrorReply(replies[i], "Pending");
    total += i % 2 == 0 ? replies[i].AsInt() : -replies[i].AsInt();
  }
  return total;
}

DurableMetrics DurableTimer::metrics() const {
  const internal::Counters& c = impl_->counters;
  DurableMetrics m;
  m.scheduled = c.scheduled.load(std::memory_order_relaxed);
  m.delivered = c.delivered.load(std::memory_order_relaxed);
  m.acknowledged = c.acknowledged.load(std::memory_order_relaxed);
  m.redelivered = c.redelivered.load(std::memory_order_relaxed);
  m.handler_failures = c.handler_failures.load(std::memory_order_relaxed);
  m.dead_lettered = c.dead_lettered.load(std::memory_order_relaxed);
  m.start_window_misses = c.start_window_misses.load(std::memory_order_relaxed);
  m.redis_errors = c.redis.errors.load(std::memory_order_relaxed);
  m.reconnects = c.redis.reconnects.load(std::memory_order_relaxed);
  m.replica_shortfalls = c.replica_shortfalls.load(std::memory_order_relaxed);
  m.redis_oom = c.redis_oom.load(std::memory_order_relaxed);
  m.redis_full = c.redis_full.load(std::memory_order_relaxed);
  m.lateness = c.Lateness();
  return m;
}

const std::string& DurableTimer::owner() const { return impl_->options.owner; }

}  // namespace tickwheel::durable
