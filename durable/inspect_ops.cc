#include "tickwheel/durable/inspect_ops.h"

#include <utility>

#include <fmt/format.h>

#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/shard_ops.h"

namespace tickwheel::durable::internal {
namespace {

absl::Status Malformed(std::string_view what) {
  return absl::InternalError(
      fmt::format("malformed reply from a durable timer script: {}", what));
}

}  // namespace

RedisCommand GetCommand(const ShardKeys& keys, std::string_view id) {
  return ScriptCommand(Script::kGet, keys, {std::string(id)});
}

absl::StatusOr<TimerRecord> ParseGetReply(RedisReply reply) {
  if (reply.type != RedisReply::Type::kArray ||
      (reply.elements.size() != 1 && reply.elements.size() != 11)) {
    return Malformed("get");
  }
  std::vector<RedisReply>& e = reply.elements;
  TimerRecord r;
  r.now_us = e[0].AsInt();
  if (e.size() == 1) return r;
  r.found = true;
  r.version = e[1].AsInt();
  r.attempt = static_cast<int>(e[2].AsInt());
  r.deadline_us = e[3].AsInt();
  r.owner = std::move(e[4].str);
  r.payload = std::move(e[5].str);
  r.due_us = e[6].AsInt();
  r.lease_us = e[7].AsInt();
  r.dead_us = e[8].AsInt();
  r.error = std::move(e[9].str);
  r.max_attempts = static_cast<int>(e[10].AsInt());
  return r;
}

RedisCommand DeadListCommand(const ShardKeys& keys, int64_t cursor_us,
                             std::string_view cursor_id, int limit) {
  return ScriptCommand(Script::kDeadList, keys,
                       {std::to_string(cursor_us), std::string(cursor_id),
                        std::to_string(limit)});
}

absl::StatusOr<std::vector<DeadEntry>> ParseDeadListReply(RedisReply reply) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.empty() ||
      (reply.elements.size() - 1) % 7 != 0) {
    return Malformed("dead-letter list");
  }
  std::vector<RedisReply>& e = reply.elements;
  std::vector<DeadEntry> out;
  out.reserve((e.size() - 1) / 7);
  for (size_t i = 1; i < e.size(); i += 7) {
    DeadEntry d;
    d.id = std::move(e[i].str);
    d.dead_us = e[i + 1].AsInt();
    d.valid = e[i + 2].AsInt() != 0;
    d.attempt = static_cast<int>(e[i + 3].AsInt());
    d.deadline_us = e[i + 4].AsInt();
    d.payload = std::move(e[i + 5].str);
    d.error = std::move(e[i + 6].str);
    out.push_back(std::move(d));
  }
  return out;
}

RedisCommand DeadOpCommand(const ShardKeys& keys, const DeadOp& op,
                           std::span<const std::string_view> ids) {
  std::vector<std::string> args;
  args.reserve(5 + ids.size());
  args.push_back(op.retry ? "retry" : "purge");
  args.push_back(op.after ? "after" : "at");
  args.push_back(std::to_string(op.time_us));
  args.push_back(std::to_string(op.upto_us));
  args.push_back(std::to_string(op.limit));
  for (const std::string_view id : ids) args.emplace_back(id);
  return ScriptCommand(Script::kDeadOp, keys, std::move(args));
}

absl::StatusOr<DeadOpReply> ParseDeadOpReply(const RedisReply& reply) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != 3) {
    return Malformed("dead-letter retry or purge");
  }
  return DeadOpReply{reply.elements[0].AsInt(), reply.elements[1].AsInt(),
                     reply.elements[2].AsInt() != 0};
}

}  // namespace tickwheel::durable::internal
