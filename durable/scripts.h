// durable/scripts.h
// -----------------------------------------------------------------------------
// Internal. The Lua scripts that change durable timers in Redis, one shard at
// a time (keys: durable/keys.h). Each runs atomically in Redis and takes
// every time decision from Redis's own clock (redis.call('TIME')), so
// processes whose clocks differ agree, and none is ever early.
//
// A shard script's KEYS are the shard's :due, :leases, :payload, :state,
// :seq, :dead, :limit and :error, in that order (keys.h), whether it uses
// them all or not. Times are integer microseconds; "version" is the token of
// one schedule or one claim, from the shard's :seq, so that an acknowledgement
// of an older claim, of a replaced or of a cancelled timer matches nothing.
//
//   kMeta      KEYS {ks:0}:meta; ARGV shards, format. Records both the first
//              time; returns the recorded {shards, format}.
//   kSchedule  ARGV "at"|"after", max_us, hint_us, shard, channel, then
//              (id, time_us, payload, max_attempts)...: each id gets a new
//              version, attempt 0, its deadline (time_us, or Redis's now +
//              time_us for "after", clamped to [0, max_us]), its payload and
//              its max attempts (0: none), and is due then; a claim on it, a
//              dead letter of it and its last error are dropped. When
//              hint_us > 0 and the earliest of those deadlines is before now
//              + hint_us, PUBLISHes "<shard> <deadline_us>" on `channel`
//              (a hint, durable/hint_listener.h; a failed PUBLISH is
//              ignored). Returns {now, deadline...}.
//   kCancel    ARGV id. Removes the timer (a dead letter too); 1 if it
//              existed, else 0.
//   kClaim     ARGV lookahead_us, lease_us, due_quota, ahead_quota,
//              start_quota, owner, max_bytes, retention_us. A timer whose
//              lease ended with its attempts at its max attempts is
//              dead-lettered, not claimed (retention_us > 0: dead letters
//              older than that are trimmed, 16 at most). Claims up to
//              due_quota timers
//              whose lease ended (redelivery) or that are due (due <= now),
//              then up to ahead_quota due within lookahead_us, each with a
//              new version, leased until max(due, now) + lease_us. Up to
//              start_quota of the due ones are started at once (attempt + 1,
//              lease from now). Stops after max_bytes of payload. Returns
//              {now, next_us, more, dead, (id, version, attempt,
//              deadline_us, due_us, started, lease_us, payload)...}: next_us
//              is the earliest due time or lease end left in the shard (-1:
//              none), more is 1 when more may be due at once, dead counts
//              the timers it dead-lettered.
//   kStart     ARGV lease_us, then (id, version, due_us)...: starts claimed
//              timers whose deadline and due time have come on Redis's
//              clock: attempt + 1, lease from now. Returns {now, r...}: r =
//              the attempt when started, -1 when not yet due, 0 when the
//              claim is gone (cancelled, replaced or claimed again).
//   kAck       ARGV (id, version)...: deletes each timer still held under
//              that version. Returns {now, 1|0...}.
//   kFail      ARGV base_us, max_us, retention_us, then (id, version,
//              error)...: records the error; a held timer is due again at
//              now + min(base_us * 2^(attempt - 1), max_us): 0 when either
//              is 0, the exponent capped at 62, the sum at
//              kMaxDeadlineMicros, so that it is finite for any attempt; or,
//              when its attempt reached its max attempts, it is moved to
//              :dead (and old dead letters trimmed as kClaim does). Returns
//              {now, 1 (due again) | 2 (dead-lettered) | 0 (not held)...}.
//   kRelease   ARGV (id, version, due_us, undo)...: a held timer is due
//              again at due_us, at once for others to take; undo = 1 takes
//              back the attempt of a start whose handler never ran.
//              Returns {now, 1|0...}.
//   kRenew     ARGV lease_us, then (id, version)...: a held timer's lease
//              ends no earlier than now + lease_us. Returns {now, lease_us
//              or 0...}.
//   kGet       ARGV id; reads only. Returns {now} when there is no such
//              timer, else {now, version, attempt, deadline_us, owner,
//              payload, due_us, lease_us, dead_us, error, max_attempts}
//              (-1: not in that set).
//   kDeadList  ARGV cursor_us (-1: from the first), cursor_id, limit; reads
//              only. The next `limit` dead letters after (cursor_us,
//              cursor_id) in (time, id bytes) order: {now, (id, dead_us,
//              valid, attempt, deadline_us, payload, error)...}; valid 0: a
//              stale :dead entry (no record, or due or leased again).
//   kDeadOp    ARGV "retry"|"purge", "at"|"after", time_us, upto_us, limit,
//              then ids (none: up to `limit` dead-lettered at or before
//              upto_us, -1 meaning now). Retry: new version, attempt 0,
//              error cleared, due at time_us (or now + time_us). Purge:
//              deletes every key of the id. Only dead letters are touched.
//              Returns {now, count, more}.
//
// Every script checks all of its arguments (counts, integers in range, ids
// not empty) before its first write and answers a bad one with an error
// reply, having changed nothing: a Lua error undoes nothing that ran before
// it, so a check halfway through could leave a timer in neither :due nor
// :leases, lost. The scripts that move a timer between the two write the
// new place first.
//
// On a full Redis (maxmemory reached, noeviction) the scripts that delete
// timers or hold memory about steady -- kCancel, kClaim, kStart, kAck,
// kFail, kRelease, kRenew, kDeadOp -- still run: their source opens with
// Redis 7's "#!lua flags=allow-oom"; kGet and kDeadList open with
// "#!lua flags=no-writes". kFail records each failure (at most 1 KiB).
// kSchedule is refused with OOM before it writes; kMeta reads first and writes
// (and may be refused) only for a new keyspace.
//
// Batches are bounded by the caller (kMaxScriptBatch) so that Lua's
// unpack() stays within its stack.

#ifndef TICKWHEEL_DURABLE_SCRIPTS_H_
#define TICKWHEEL_DURABLE_SCRIPTS_H_

#include <string>
#include <string_view>

namespace tickwheel::durable::internal {

enum class Script {
  kMeta,
  kSchedule,
  kCancel,
  kClaim,
  kStart,
  kAck,
  kFail,
  kRelease,
  kRenew,
  kGet,
  kDeadList,
  kDeadOp,
};
inline constexpr int kScriptCount = 12;

// Entries per script call at most (a claim, an ack batch, a ScheduleMany
// chunk): unpack() of 4 arguments per entry stays far below Lua's limit.
inline constexpr int kMaxScriptBatch = 1000;

// The largest deadline a timer may have: 2^53 - 1 us (the year 2255), the
// largest integer a Lua number and a sorted-set score hold exactly.
inline constexpr int64_t kMaxDeadlineMicros = (int64_t{1} << 53) - 1;

// The script's Lua source.
std::string_view ScriptSource(Script script);
// SHA-1 of the source, as EVALSHA names it. Computed once; thread-safe.
const std::string& ScriptSha(Script script);
// "claim", "ack", ...: for messages.
std::string_view ScriptName(Script script);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_SCRIPTS_H_
