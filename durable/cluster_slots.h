// durable/cluster_slots.h
// -----------------------------------------------------------------------------
// Internal. What a client of a Redis Cluster needs to know to send a command
// to the node that serves it; pure functions, no I/O:
//
//   KeyHashSlot      the slot of a key: CRC16 (XMODEM) of the key, or of its
//                    hash tag (the bytes between the first '{' and the next
//                    '}', when not empty), modulo 16384
//   CommandSlot      the slot of a command's first key (EVAL/EVALSHA: the
//                    first of its KEYS; otherwise its first argument)
//   SlotMap          slot -> the master that serves it, from CLUSTER SLOTS
//   ParseRedirect    a MOVED or ASK error reply: the slot and where to go
//
// SlotMap is a value: thread-compatible.

#ifndef TICKWHEEL_DURABLE_CLUSTER_SLOTS_H_
#define TICKWHEEL_DURABLE_CLUSTER_SLOTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tickwheel/durable/redis_connection.h"

namespace tickwheel::durable::internal {

inline constexpr int kClusterSlots = 16384;

// CRC16, polynomial 0x1021, initial value 0, no reflection (the XMODEM
// variant Redis Cluster uses; CRC16("123456789") == 0x31C3).
uint16_t Crc16(std::string_view bytes);

// Redis Cluster's key hash slot, in [0, kClusterSlots).
int KeyHashSlot(std::string_view key);

// The slot of `command`'s first key; nullopt when it has none (MULTI, EXEC,
// an EVAL with no KEYS).
std::optional<int> CommandSlot(const RedisCommand& command);

class SlotMap {
 public:
  // From the reply to CLUSTER SLOTS asked of `asked` (whose host stands in
  // for an empty or "?" host in the reply). Internal when malformed.
  static absl::StatusOr<SlotMap> FromClusterSlots(const RedisReply& reply,
                                                  const RedisEndpoint& asked);

  // The master serving `slot`; nullptr when no node serves it.
  const RedisEndpoint* Master(int slot) const;
  // Every master, once each.
  const std::vector<RedisEndpoint>& masters() const { return masters_; }
  bool empty() const { return masters_.empty(); }

 private:
  std::vector<RedisEndpoint> masters_;
  std::vector<int16_t> owner_;  // slot -> index in masters_, -1: none
};

// A MOVED or ASK error reply ("MOVED 3999 127.0.0.1:6381"); nullopt for
// any other reply.
struct Redirect {
  bool ask = false;  // ASK: this command only, after ASKING; MOVED: for good
  int slot = 0;
  RedisEndpoint to;
};
std::optional<Redirect> ParseRedirect(const RedisReply& reply);

// "host:port" (an IPv6 host without brackets is accepted: the last ':'
// separates the port) as a TCP endpoint; InvalidArgument otherwise.
absl::StatusOr<RedisEndpoint> ParseHostPort(std::string_view host_port);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_CLUSTER_SLOTS_H_
