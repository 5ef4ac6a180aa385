#include "tickwheel/durable/shard_ops.h"

#include <utility>

#include <fmt/format.h>

namespace tickwheel::durable::internal {
namespace {

absl::Status Malformed(std::string_view what) {
  return absl::InternalError(
      fmt::format("malformed reply from a durable timer script: {}", what));
}

}  // namespace

RedisCommand ScriptCommand(Script script, const ShardKeys& keys,
                           std::vector<std::string> args, bool by_source) {
  RedisCommand cmd;
  cmd.reserve(11 + args.size());
  if (by_source) {
    cmd.push_back("EVAL");
    cmd.emplace_back(ScriptSource(script));
  } else {
    cmd.push_back("EVALSHA");
    cmd.push_back(ScriptSha(script));
  }
  // Every shard script gets every key of the shard, in the order of
  // scripts.h, whether it uses them or not: one shape, one slot.
  cmd.push_back("8");
  cmd.push_back(keys.due);
  cmd.push_back(keys.leases);
  cmd.push_back(keys.payload);
  cmd.push_back(keys.state);
  cmd.push_back(keys.seq);
  cmd.push_back(keys.dead);
  cmd.push_back(keys.limit);
  cmd.push_back(keys.error);
  for (std::string& a : args) cmd.push_back(std::move(a));
  return cmd;
}

RedisCommand ScheduleCommand(const ShardKeys& keys, bool after,
                             std::span<const ScheduleArgs> entries,
                             bool by_source, const ScheduleHint& hint) {
  std::vector<std::string> args;
  args.reserve(5 + 4 * entries.size());
  args.push_back(after ? "after" : "at");
  args.push_back(std::to_string(kMaxDeadlineMicros));
  args.push_back(std::to_string(hint.window_us));
  args.push_back(std::to_string(hint.shard));
  args.emplace_back(hint.channel);
  for (const ScheduleArgs& e : entries) {
    args.emplace_back(e.id);
    args.push_back(std::to_string(e.time_us));
    args.emplace_back(e.payload);
    args.push_back(std::to_string(e.max_attempts));
  }
  return ScriptCommand(Script::kSchedule, keys, std::move(args), by_source);
}

RedisCommand CancelCommand(const ShardKeys& keys, std::string_view id) {
  return ScriptCommand(Script::kCancel, keys, {std::string(id)});
}

RedisCommand ClaimCommand(const ShardKeys& keys, const ClaimArgs& a,
                          std::string_view owner) {
  return ScriptCommand(
      Script::kClaim, keys,
      {std::to_string(a.lookahead_us), std::to_string(a.lease_us),
       std::to_string(a.due_quota), std::to_string(a.ahead_quota),
       std::to_string(a.start_quota), std::string(owner),
       std::to_string(a.max_bytes), std::to_string(a.dead_retention_us)});
}

absl::StatusOr<ClaimReply> ParseClaimReply(RedisReply reply) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() < 4 ||
      (reply.elements.size() - 4) % 8 != 0) {
    return Malformed("claim");
  }
  std::vector<RedisReply>& e = reply.elements;
  ClaimReply out;
  out.now_us = e[0].AsInt();
  out.next_us = e[1].AsInt();
  out.more = e[2].AsInt() != 0;
  out.dead_lettered = e[3].AsInt();
  out.timers.reserve((e.size() - 4) / 8);
  for (size_t i = 4; i < e.size(); i += 8) {
    ClaimedTimer t;
    t.id = std::move(e[i].str);
    t.version = e[i + 1].AsInt();
    t.attempt = static_cast<int>(e[i + 2].AsInt());
    t.deadline_us = e[i + 3].AsInt();
    t.due_us = e[i + 4].AsInt();
    t.started = e[i + 5].AsInt() != 0;
    t.lease_us = e[i + 6].AsInt();
    t.payload = std::move(e[i + 7].str);
    out.timers.push_back(std::move(t));
  }
  return out;
}

RedisCommand StartCommand(const ShardKeys& keys, int64_t lease_us,
                          std::span<const HeldRef> refs) {
  std::vector<std::string> args;
  args.reserve(1 + 3 * refs.size());
  args.push_back(std::to_string(lease_us));
  for (const HeldRef& r : refs) {
    args.emplace_back(r.id);
    args.push_back(std::to_string(r.version));
    args.push_back(std::to_string(r.due_us));
  }
  return ScriptCommand(Script::kStart, keys, std::move(args));
}

RedisCommand AckCommand(const ShardKeys& keys, std::span<const HeldRef> refs) {
  std::vector<std::string> args;
  args.reserve(2 * refs.size());
  for (const HeldRef& r : refs) {
    args.emplace_back(r.id);
    args.push_back(std::to_string(r.version));
  }
  return ScriptCommand(Script::kAck, keys, std::move(args));
}

RedisCommand FailCommand(const ShardKeys& keys, int64_t base_us, int64_t max_us,
                         int64_t dead_retention_us,
                         std::span<const HeldRef> refs) {
  std::vector<std::string> args;
  args.reserve(3 + 3 * refs.size());
  args.push_back(std::to_string(base_us));
  args.push_back(std::to_string(max_us));
  args.push_back(std::to_string(dead_retention_us));
  for (const HeldRef& r : refs) {
    args.emplace_back(r.id);
    args.push_back(std::to_string(r.version));
    args.emplace_back(r.error);
  }
  return ScriptCommand(Script::kFail, keys, std::move(args));
}

RedisCommand ReleaseCommand(const ShardKeys& keys,
                            std::span<const HeldRef> refs) {
  std::vector<std::string> args;
  args.reserve(4 * refs.size());
  for (const HeldRef& r : refs) {
    args.emplace_back(r.id);
    args.push_back(std::to_string(r.version));
    args.push_back(std::to_string(r.due_us));
    args.push_back(r.undo ? "1" : "0");
  }
  return ScriptCommand(Script::kRelease, keys, std::move(args));
}

RedisCommand RenewCommand(const ShardKeys& keys, int64_t lease_us,
                          std::span<const HeldRef> refs) {
  std::vector<std::string> args;
  args.reserve(1 + 2 * refs.size());
  args.push_back(std::to_string(lease_us));
  for (const HeldRef& r : refs) {
    args.emplace_back(r.id);
    args.push_back(std::to_string(r.version));
  }
  return ScriptCommand(Script::kRenew, keys, std::move(args));
}

absl::StatusOr<BatchReply> ParseBatchReply(const RedisReply& reply,
                                           size_t count) {
  if (reply.type != RedisReply::Type::kArray ||
      reply.elements.size() != count + 1) {
    return Malformed(fmt::format("expected {} results", count));
  }
  BatchReply out;
  out.now_us = reply.elements[0].AsInt();
  out.results.reserve(count);
  for (size_t i = 1; i < reply.elements.size(); ++i) {
    out.results.push_back(reply.elements[i].AsInt());
  }
  return out;
}

}  // namespace tickwheel::durable::internal
