// DurableTimer's calls that read one timer (Get()) and that list, retry and
// purge dead letters. durable_timer.cc has the others; timer_impl.h the
// state they share.

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/inspect_ops.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/timer_impl.h"

namespace tickwheel::durable {

using internal::RedisCommand;
using internal::RedisReply;

namespace {

// A bulk call's script takes at most this many dead letters per shard per
// round trip, so that Redis serves others between them.
constexpr int kDeadBatch = 1000;
constexpr int kMaxPageSize = 1000;

// A page token: "<dead-lettered at, us>:<id>" of the last entry of a page.
std::string PageToken(int64_t us, std::string_view id) {
  return fmt::format("{}:{}", us, id);
}

absl::Status ParsePageToken(std::string_view token, int64_t* us,
                            std::string* id) {
  const size_t colon = token.find(':');
  int64_t v = -1;
  if (colon != std::string_view::npos && colon > 0) {
    const auto [end, ec] =
        std::from_chars(token.data(), token.data() + colon, v);
    if (ec == std::errc() && end == token.data() + colon && v >= 0 &&
        v <= internal::kMaxDeadlineMicros) {
      *us = v;
      *id = std::string(token.substr(colon + 1));
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      "ListDeadLetters: the page token is not one ListDeadLetters() "
      "returned; pass an empty token for the first page");
}

}  // namespace

absl::StatusOr<TimerInfo> DurableTimer::Get(std::string_view id) {
  if (absl::Status s = internal::CheckId(id); !s.ok()) return s;
  const int shard = internal::ShardOf(id, impl_->options.shards);
  const RedisCommand cmd =
      internal::GetCommand(impl_->keys[static_cast<size_t>(shard)], id);
  std::vector<RedisReply> replies;
  if (absl::Status s = impl_->Call({&cmd, 1}, &replies); !s.ok()) return s;
  if (replies[0].is_error()) return impl_->ErrorReply(replies[0], "Get");
  absl::StatusOr<internal::TimerRecord> r =
      internal::ParseGetReply(std::move(replies[0]));
  if (!r.ok()) return r.status();
  if (!r->found) {
    return absl::NotFoundError(
        fmt::format("durable timer \"{}\" is not scheduled: never scheduled, "
                    "acknowledged, cancelled or purged",
                    id.substr(0, 64)));
  }
  TimerInfo info;
  info.id = std::string(id);
  info.payload = std::move(r->payload);
  info.deadline = absl::FromUnixMicros(r->deadline_us);
  info.attempts = r->attempt;
  info.max_attempts = r->max_attempts;
  info.last_error = std::move(r->error);
  if (r->dead_us >= 0 && r->due_us < 0 && r->lease_us < 0) {
    info.state = TimerState::kDeadLettered;
    info.dead_lettered_at = absl::FromUnixMicros(r->dead_us);
  } else if (r->lease_us > r->now_us) {
    info.state = TimerState::kLeased;
    info.lease_end = absl::FromUnixMicros(r->lease_us);
    info.owner = std::move(r->owner);
  } else if (r->lease_us >= 0 || r->due_us >= 0) {
    // A lease that ended makes the timer due again, for any process.
    info.state = TimerState::kScheduled;
    info.next_delivery = absl::FromUnixMicros(
        std::max({r->lease_us, r->due_us, r->deadline_us}));
  } else {
    return absl::InternalError(fmt::format(
        "durable timer \"{}\" has a record but is neither due, leased nor "
        "dead-lettered; was the keyspace changed by hand?",
        id.substr(0, 64)));
  }
  return info;
}

absl::StatusOr<DeadLetterPage> DurableTimer::ListDeadLetters(
    int page_size, std::string_view page_token) {
  if (page_size < 1 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        fmt::format("ListDeadLetters: page_size must be in [1, {}], got {}",
                    kMaxPageSize, page_size));
  }
  int64_t cursor_us = -1;
  std::string cursor_id;
  if (!page_token.empty()) {
    if (absl::Status s = ParsePageToken(page_token, &cursor_us, &cursor_id);
        !s.ok()) {
      return s;
    }
  }
  std::vector<RedisCommand> commands;
  commands.reserve(impl_->keys.size());
  for (const internal::ShardKeys& k : impl_->keys) {
    commands.push_back(
        internal::DeadListCommand(k, cursor_us, cursor_id, page_size));
  }
  std::vector<RedisReply> replies;
  if (absl::Status s = impl_->Call(commands, &replies); !s.ok()) return s;
  std::vector<internal::DeadEntry> all;
  for (RedisReply& r : replies) {
    if (r.is_error()) return impl_->ErrorReply(r, "ListDeadLetters");
    absl::StatusOr<std::vector<internal::DeadEntry>> entries =
        internal::ParseDeadListReply(std::move(r));
    if (!entries.ok()) return entries.status();
    for (internal::DeadEntry& e : *entries) all.push_back(std::move(e));
  }
  // Each shard's entries come in (time, id) order; so does the page.
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.dead_us != b.dead_us ? a.dead_us < b.dead_us : a.id < b.id;
  });
  DeadLetterPage page;
  const size_t n = std::min(all.size(), static_cast<size_t>(page_size));
  if (n == static_cast<size_t>(page_size)) {  // before the ids move out
    page.next_page_token = PageToken(all[n - 1].dead_us, all[n - 1].id);
  }
  for (size_t i = 0; i < n; ++i) {
    internal::DeadEntry& e = all[i];
    if (!e.valid) continue;  // a stale entry: skipped, but paged past
    page.dead_letters.push_back({std::move(e.id), std::move(e.payload),
                                 absl::FromUnixMicros(e.deadline_us), e.attempt,
                                 std::move(e.error),
                                 absl::FromUnixMicros(e.dead_us)});
  }
  return page;
}

absl::StatusOr<bool> DurableTimer::Impl::DeadOne(std::string_view id,
                                                 internal::DeadOp op,
                                                 std::string_view what) {
  if (absl::Status s = internal::CheckId(id); !s.ok()) return s;
  const int shard = internal::ShardOf(id, options.shards);
  std::vector<RedisCommand> commands = {
      internal::DeadOpCommand(keys[static_cast<size_t>(shard)], op, {&id, 1})};
  if (options.min_replicas_acked > 0) commands.push_back(Barrier(shard));
  std::vector<RedisReply> replies;
  internal::ReplicaAck ack;
  if (absl::Status s = Call(commands, &replies, &ack); !s.ok()) {
    return internal::WithAdvice(
        std::move(s), fmt::format("it may or may not be done: call {}() "
                                  "again (false then means it was)",
                                  what));
  }
  if (replies[0].is_error()) return ErrorReply(replies[0], what);
  absl::StatusOr<internal::DeadOpReply> r =
      internal::ParseDeadOpReply(replies[0]);
  if (!r.ok()) return r.status();
  if (op.retry && r->count > 0) {
    const int64_t due = op.after ? r->now_us + op.time_us : op.time_us;
    if (std::shared_ptr<internal::Delivery> d = delivery_snapshot()) {
      d->Scheduled(shard, due);
    }
  }
  if (absl::Status s =
          Replicated(ack, fmt::format("{}()", what),
                     fmt::format("call {}() again (false then means it was "
                                 "done)",
                                 what));
      !s.ok()) {
    return s;
  }
  return r->count > 0;
}

absl::StatusOr<int64_t> DurableTimer::Impl::DeadAll(internal::DeadOp op,
                                                    std::string_view what) {
  op.limit = kDeadBatch;
  std::vector<int> shards(keys.size());
  for (size_t i = 0; i < shards.size(); ++i) shards[i] = static_cast<int>(i);
  int64_t total = 0;
  bool first = true;
  while (!shards.empty()) {
    std::vector<RedisCommand> commands;
    for (const int s : shards) {
      commands.push_back(
          internal::DeadOpCommand(keys[static_cast<size_t>(s)], op, {}));
    }
    const size_t ops = commands.size();
    if (options.min_replicas_acked > 0) {
      for (const int s : shards) commands.push_back(Barrier(s));
    }
    std::vector<RedisReply> replies;
    internal::ReplicaAck ack;
    if (absl::Status s = Call(commands, &replies, &ack); !s.ok()) {
      return internal::WithAdvice(
          std::move(s),
          fmt::format("{} dead letters were done before; call {}() again "
                      "for the rest",
                      total, what));
    }
    std::vector<int> more;
    int64_t now = INT64_MAX;
    for (size_t i = 0; i < ops; ++i) {
      if (replies[i].is_error()) return ErrorReply(replies[i], what);
      absl::StatusOr<internal::DeadOpReply> r =
          internal::ParseDeadOpReply(replies[i]);
      if (!r.ok()) return r.status();
      total += r->count;
      now = std::min(now, r->now_us);
      if (r->more) more.push_back(shards[i]);
      if (op.retry && r->count > 0) {
        if (std::shared_ptr<internal::Delivery> d = delivery_snapshot()) {
          d->Scheduled(shards[i],
                       op.after ? r->now_us + op.time_us : op.time_us);
        }
      }
    }
    // Later rounds take only what was dead-lettered before the first one
    // answered: timers dead-lettered meanwhile (a retried timer that failed
    // again, say) are left for the next call, so the loop ends.
    if (first && (op.upto_us < 0 || op.upto_us > now)) op.upto_us = now;
    first = false;
    if (absl::Status s =
            Replicated(ack, fmt::format("{}() of {} dead letters", what, total),
                       fmt::format("call {}() again for what is left", what));
        !s.ok()) {
      return s;
    }
    shards = std::move(more);
  }
  return total;
}

absl::StatusOr<bool> DurableTimer::RetryDeadLetter(std::string_view id) {
  return impl_->DeadOne(id, {.retry = true, .after = true, .time_us = 0},
                        "RetryDeadLetter");
}

absl::StatusOr<bool> DurableTimer::RetryDeadLetter(std::string_view id,
                                                   absl::Time at) {
  return impl_->DeadOne(
      id,
      {.retry = true, .after = false, .time_us = internal::DeadlineMicros(at)},
      "RetryDeadLetter");
}

absl::StatusOr<int64_t> DurableTimer::RetryAllDeadLetters() {
  return impl_->DeadAll({.retry = true, .after = true, .time_us = 0},
                        "RetryAllDeadLetters");
}

absl::StatusOr<int64_t> DurableTimer::RetryAllDeadLetters(absl::Time at) {
  return impl_->DeadAll(
      {.retry = true, .after = false, .time_us = internal::DeadlineMicros(at)},
      "RetryAllDeadLetters");
}

absl::StatusOr<bool> DurableTimer::PurgeDeadLetter(std::string_view id) {
  return impl_->DeadOne(id, {.retry = false}, "PurgeDeadLetter");
}

absl::StatusOr<int64_t> DurableTimer::PurgeDeadLetters(absl::Time before) {
  internal::DeadOp op{.retry = false};
  if (before <= absl::UnixEpoch()) return 0;
  if (before < absl::InfiniteFuture()) {
    // Strictly before: the last microsecond before `before`, rounded down.
    op.upto_us = std::min(internal::DeadlineMicros(before) - 1,
                          internal::kMaxDeadlineMicros);
  }
  return impl_->DeadAll(op, "PurgeDeadLetters");
}

}  // namespace tickwheel::durable
