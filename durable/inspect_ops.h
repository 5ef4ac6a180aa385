// durable/inspect_ops.h
// -----------------------------------------------------------------------------
// Internal. The commands of Get() and of the dead-letter calls on one shard
// (scripts kGet, kDeadList and kDeadOp of durable/scripts.h), and the parsed
// shape of their replies. Pure functions: no Redis, no clock.

#ifndef TICKWHEEL_DURABLE_INSPECT_OPS_H_
#define TICKWHEEL_DURABLE_INSPECT_OPS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/redis_connection.h"

namespace tickwheel::durable::internal {

RedisCommand GetCommand(const ShardKeys& keys, std::string_view id);

// One timer as kGet found it. Times in us on Redis's clock; -1: not in that
// set.
struct TimerRecord {
  bool found = false;
  int64_t now_us = 0;
  int64_t version = 0;
  int attempt = 0;
  int64_t deadline_us = 0;
  std::string owner;
  std::string payload;
  int64_t due_us = -1;    // in :due
  int64_t lease_us = -1;  // in :leases
  int64_t dead_us = -1;   // in :dead
  std::string error;
  int max_attempts = 0;
};
absl::StatusOr<TimerRecord> ParseGetReply(RedisReply reply);

// Up to `limit` dead letters after (cursor_us, cursor_id) in (time, id)
// order; cursor_us -1: from the first.
RedisCommand DeadListCommand(const ShardKeys& keys, int64_t cursor_us,
                             std::string_view cursor_id, int limit);
struct DeadEntry {
  std::string id;
  int64_t dead_us = 0;
  // False: a stale entry (no record, or the timer is due or leased again);
  // it still counts for paging.
  bool valid = false;
  int attempt = 0;
  int64_t deadline_us = 0;
  std::string payload;
  std::string error;
};
absl::StatusOr<std::vector<DeadEntry>> ParseDeadListReply(RedisReply reply);

// Retries (due at `time_us`, or Redis's now + `time_us` when `after`) or
// purges the dead letters `ids`, or, when `ids` is empty, up to `limit` of
// those dead-lettered at or before `upto_us` (-1: Redis's now).
struct DeadOp {
  bool retry = false;
  bool after = true;
  int64_t time_us = 0;
  int64_t upto_us = -1;
  int limit = 1;
};
RedisCommand DeadOpCommand(const ShardKeys& keys, const DeadOp& op,
                           std::span<const std::string_view> ids);
struct DeadOpReply {
  int64_t now_us = 0;
  int64_t count = 0;  // dead letters retried or purged
  bool more = false;  // `limit` taken: there may be more
};
absl::StatusOr<DeadOpReply> ParseDeadOpReply(const RedisReply& reply);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_INSPECT_OPS_H_
