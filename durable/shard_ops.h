// durable/shard_ops.h
// -----------------------------------------------------------------------------
// Internal. The commands that run durable/'s scripts (durable/scripts.h) on
// one shard, and the parsed shape of their replies. Pure functions: no
// Redis, no clock, so they are tested on their own.

#ifndef TICKWHEEL_DURABLE_SHARD_OPS_H_
#define TICKWHEEL_DURABLE_SHARD_OPS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/scripts.h"

namespace tickwheel::durable::internal {

// EVALSHA of `script` on shard `keys` with `args` ("EVAL" with the source
// when `by_source`: inside MULTI/EXEC, where a missing script would fail one
// command and not the others).
RedisCommand ScriptCommand(Script script, const ShardKeys& keys,
                           std::vector<std::string> args,
                           bool by_source = false);

struct ScheduleArgs {
  std::string_view id;
  int64_t time_us;  // deadline, or delay for ScheduleAfter
  std::string_view payload;
  int max_attempts = 0;  // 0: no limit
};
// Whether and where kSchedule announces a timer due soon (a hint): when
// the earliest deadline it writes is before Redis's now + window_us (0:
// never), it PUBLISHes "<shard> <deadline us>" on `channel`.
struct ScheduleHint {
  int shard = 0;  // the shard the command schedules on
  int64_t window_us = 0;
  std::string_view channel;  // HintChannel() of the keyspace
};
RedisCommand ScheduleCommand(const ShardKeys& keys, bool after,
                             std::span<const ScheduleArgs> entries,
                             bool by_source = false,
                             const ScheduleHint& hint = {});
RedisCommand CancelCommand(const ShardKeys& keys, std::string_view id);

struct ClaimArgs {
  int64_t lookahead_us = 0;
  int64_t lease_us = 0;
  int due_quota = 0;
  int ahead_quota = 0;
  int start_quota = 0;
  int64_t max_bytes = 0;
  int64_t dead_retention_us = 0;  // 0: dead letters are kept
};
RedisCommand ClaimCommand(const ShardKeys& keys, const ClaimArgs& args,
                          std::string_view owner);

// One claimed timer, as kClaim returns it.
struct ClaimedTimer {
  std::string id;
  int64_t version = 0;
  int attempt = 0;  // after this claim; counts starts
  int64_t deadline_us = 0;
  int64_t due_us = 0;    // when this delivery became due
  bool started = false;  // started by the claim itself
  int64_t lease_us = 0;  // lease end
  std::string payload;
};
struct ClaimReply {
  int64_t now_us = 0;
  int64_t next_us = -1;  // earliest due time or lease end left; -1: none
  bool more = false;
  int64_t dead_lettered = 0;  // timers out of attempts whose lease ended
  std::vector<ClaimedTimer> timers;
};
absl::StatusOr<ClaimReply> ParseClaimReply(RedisReply reply);

// A timer this process holds under a version, for kStart, kAck, kFail,
// kRelease and kRenew.
struct HeldRef {
  std::string_view id;
  int64_t version = 0;
  int64_t due_us = 0;      // kStart, kRelease
  bool undo = false;       // kRelease: take back the attempt
  std::string_view error;  // kFail: the failure, recorded with the timer
};
RedisCommand StartCommand(const ShardKeys& keys, int64_t lease_us,
                          std::span<const HeldRef> refs);
RedisCommand AckCommand(const ShardKeys& keys, std::span<const HeldRef> refs);
// kFail's results: 1 due again, 2 dead-lettered, 0 no longer held.
RedisCommand FailCommand(const ShardKeys& keys, int64_t base_us, int64_t max_us,
                         int64_t dead_retention_us,
                         std::span<const HeldRef> refs);
RedisCommand ReleaseCommand(const ShardKeys& keys,
                            std::span<const HeldRef> refs);
RedisCommand RenewCommand(const ShardKeys& keys, int64_t lease_us,
                          std::span<const HeldRef> refs);

// {now, r...} with exactly `count` results.
struct BatchReply {
  int64_t now_us = 0;
  std::vector<int64_t> results;
};
absl::StatusOr<BatchReply> ParseBatchReply(const RedisReply& reply,
                                           size_t count);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_SHARD_OPS_H_
