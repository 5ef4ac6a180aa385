#include "tickwheel/durable/keys.h"

#include <cstdint>

#include <fmt/format.h>

namespace tickwheel::durable::internal {

std::vector<ShardKeys> MakeShardKeys(std::string_view keyspace, int shards) {
  std::vector<ShardKeys> keys;
  keys.reserve(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) {
    const std::string tag = fmt::format("{{{}:{}}}", keyspace, s);
    keys.push_back({tag + ":due", tag + ":leases", tag + ":payload",
                    tag + ":state", tag + ":seq", tag + ":dead", tag + ":limit",
                    tag + ":error"});
  }
  return keys;
}

std::string MetaKey(std::string_view keyspace) {
  return fmt::format("{{{}:0}}:meta", keyspace);
}

std::string HintChannel(std::string_view keyspace) {
  return fmt::format("{{{}}}:hints", keyspace);
}

absl::Status CheckKeyspace(std::string_view keyspace) {
  if (keyspace.empty() || keyspace.size() > kMaxKeyspaceBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "DurableTimerOptions::keyspace must be 1 to {} bytes, got {}",
        kMaxKeyspaceBytes, keyspace.size()));
  }
  for (const char c : keyspace) {
    if (c == '{' || c == '}' || static_cast<unsigned char>(c) < 0x20 ||
        c == 0x7f) {
      return absl::InvalidArgumentError(fmt::format(
          "DurableTimerOptions::keyspace \"{}\" may not hold '{{', '}}' or "
          "control characters (keys are hash-tagged "
          "\"{{<keyspace>:<shard>}}\")",
          keyspace));
    }
  }
  return absl::OkStatus();
}

int ShardOf(std::string_view id, int shards) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<uint64_t>(shards));
}

}  // namespace tickwheel::durable::internal
