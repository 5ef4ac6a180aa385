// durable/keys.h
// -----------------------------------------------------------------------------
// Internal. Where durable timers live in Redis: the key names of a keyspace
// and the shard of a timer id.
//
// Every key of shard s begins with the hash tag "{<keyspace>:<s>}", so that
// Redis Cluster keeps a shard's keys in one slot and a script may touch all
// of them; different shards may live on different nodes. Per shard:
//
//   {ks:s}:due      ZSET  id -> when it may be delivered, in microseconds on
//                         Redis's clock (TIME): its deadline, or the time of
//                         its next attempt after a failure
//   {ks:s}:leases   ZSET  id -> when the current claim's lease ends (us)
//   {ks:s}:payload  HASH  id -> payload
//   {ks:s}:state    HASH  id -> "<version>:<attempt>:<deadline us>:
//                         <payload bytes>:<owner>" (owner empty unless
//                         claimed)
//   {ks:s}:seq      STRING the shard's version counter (INCRBY)
//   {ks:s}:dead     ZSET  id -> when it was dead-lettered (us, Redis's clock)
//   {ks:s}:limit    HASH  id -> its max attempts (only when it has one)
//   {ks:s}:error    HASH  id -> its last failure (up to 1 KiB)
//
// and, on shard 0 only, {ks:0}:meta (HASH: "shards", "format"), which the
// first Connect() of a keyspace records. A timer is in :state (and :payload)
// from Schedule() until it is acknowledged, cancelled or purged, and then in
// exactly one of :due, :leases and :dead (a dead letter). docs/DURABLE.md has
// the whole model.

#ifndef TICKWHEEL_DURABLE_KEYS_H_
#define TICKWHEEL_DURABLE_KEYS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace tickwheel::durable::internal {

// The version of the data model that {ks:0}:meta records.
inline constexpr int kDataFormat = 1;

// The limits Connect() checks.
inline constexpr int kMaxShards = 1024;
inline constexpr size_t kMaxKeyspaceBytes = 128;

struct ShardKeys {
  std::string due, leases, payload, state, seq, dead, limit, error;
};

// The keys of every shard, index = shard.
std::vector<ShardKeys> MakeShardKeys(std::string_view keyspace, int shards);

// "{<keyspace>:0}:meta".
std::string MetaKey(std::string_view keyspace);

// "{<keyspace>}:hints": the Pub/Sub channel on which Schedule*() announces
// timers due soon ("<shard> <deadline us>", durable/hint_listener.h). A
// channel, not a key: PUBLISH reaches the subscribers of every node of a
// Redis Cluster.
std::string HintChannel(std::string_view keyspace);

// InvalidArgument unless `keyspace` is 1..kMaxKeyspaceBytes bytes without
// '{', '}' or control characters (a brace would break the hash tag).
absl::Status CheckKeyspace(std::string_view keyspace);

// The shard of timer `id`: FNV-1a (64 bits) of its bytes, modulo `shards`.
// The same on every machine and in every process, for a given shard count.
int ShardOf(std::string_view id, int shards);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_KEYS_H_
