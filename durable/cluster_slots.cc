#include "tickwheel/durable/cluster_slots.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace tickwheel::durable::internal {
namespace {

// The whole of `text` as a decimal int.
bool ParseInt(std::string_view text, int* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  // Bit by bit: keys are short and a table would be 512 bytes of constants
  // to get right by hand.
  uint16_t crc = 0;
  for (const char c : bytes) {
    crc ^= static_cast<uint16_t>(static_cast<uint8_t>(c)) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

int KeyHashSlot(std::string_view key) {
  // The hash tag: from the first '{' to the first '}' after it, when that
  // holds at least one byte; otherwise the whole key.
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) % kClusterSlots;
}

std::optional<int> CommandSlot(const RedisCommand& command) {
  if (command.empty()) return std::nullopt;
  std::string name = command[0];
  for (char& c : name) c = static_cast<char>(std::toupper(c));
  if (name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" ||
      name == "EVALSHA_RO") {
    if (command.size() < 4) return std::nullopt;
    int numkeys = 0;
    if (!ParseInt(command[2], &numkeys) || numkeys < 1) {
      return std::nullopt;
    }
    return KeyHashSlot(command[3]);
  }
  if (name == "MULTI" || name == "EXEC" || name == "DISCARD" ||
      name == "PING" || name == "TIME" || name == "SCRIPT" ||
      command.size() < 2) {
    return std::nullopt;
  }
  return KeyHashSlot(command[1]);
}

absl::StatusOr<RedisEndpoint> ParseHostPort(std::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string_view::npos || colon == 0 ||
      !ParseInt(host_port.substr(colon + 1), &port) || port < 1 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        fmt::format("\"{}\" is not host:port", host_port));
  }
  std::string_view host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  RedisEndpoint e;
  e.host = std::string(host);
  e.port = port;
  return e;
}

absl::StatusOr<SlotMap> SlotMap::FromClusterSlots(const RedisReply& reply,
                                                  const RedisEndpoint& asked) {
  if (reply.type != RedisReply::Type::kArray) {
    return absl::InternalError("malformed reply to CLUSTER SLOTS");
  }
  SlotMap map;
  map.owner_.assign(kClusterSlots, -1);
  for (const RedisReply& range : reply.elements) {
    // [start, end, [host, port, id, ...], replicas...]
    if (range.type != RedisReply::Type::kArray || range.elements.size() < 3 ||
        range.elements[2].type != RedisReply::Type::kArray ||
        range.elements[2].elements.size() < 2) {
      return absl::InternalError("malformed range in CLUSTER SLOTS");
    }
    const int64_t start = range.elements[0].AsInt();
    const int64_t end = range.elements[1].AsInt();
    if (start < 0 || end >= kClusterSlots || start > end) {
      return absl::InternalError(
          fmt::format("CLUSTER SLOTS names slots {}..{}", start, end));
    }
    const RedisReply& node = range.elements[2];
    RedisEndpoint e;
    e.host = node.elements[0].str;
    if (e.host.empty() || e.host == "?") e.host = asked.host;
    e.port = static_cast<int>(node.elements[1].AsInt());
    size_t index = 0;
    while (index < map.masters_.size() &&
           !(map.masters_[index].host == e.host &&
             map.masters_[index].port == e.port)) {
      ++index;
    }
    if (index == map.masters_.size()) map.masters_.push_back(e);
    for (int64_t s = start; s <= end; ++s) {
      map.owner_[static_cast<size_t>(s)] = static_cast<int16_t>(index);
    }
  }
  return map;
}

const RedisEndpoint* SlotMap::Master(int slot) const {
  if (slot < 0 || slot >= static_cast<int>(owner_.size())) return nullptr;
  const int16_t i = owner_[static_cast<size_t>(slot)];
  return i < 0 ? nullptr : &masters_[static_cast<size_t>(i)];
}

std::optional<Redirect> ParseRedirect(const RedisReply& reply) {
  Redirect r;
  std::string_view rest;
  if (reply.IsErrorCode("MOVED") && reply.str.size() > 6) {
    rest = std::string_view(reply.str).substr(6);
  } else if (reply.IsErrorCode("ASK") && reply.str.size() > 4) {
    r.ask = true;
    rest = std::string_view(reply.str).substr(4);
  } else {
    return std::nullopt;
  }
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  if (!ParseInt(rest.substr(0, space), &r.slot) || r.slot < 0 ||
      r.slot >= kClusterSlots) {
    return std::nullopt;
  }
  absl::StatusOr<RedisEndpoint> to = ParseHostPort(rest.substr(space + 1));
  if (!to.ok()) return std::nullopt;
  r.to = *std::move(to);
  return r;
}

}  // namespace tickwheel::durable::internal
