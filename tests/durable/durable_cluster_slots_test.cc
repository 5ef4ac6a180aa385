// tests/durable/durable_cluster_slots_test.cc
// -----------------------------------------------------------------------------
// The Redis Cluster arithmetic without a cluster: CRC16 and the key hash slot
// (with the hash tag rules of the cluster specification), the slot of a
// command, the slot map read from a CLUSTER SLOTS reply, and MOVED / ASK
// replies. durable_cluster_test checks the slots against a real cluster.

#include <gtest/gtest.h>

#include "tickwheel/durable/cluster_slots.h"

namespace tickwheel::durable::internal {
namespace {

RedisReply Str(std::string s) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.str = std::move(s);
  return r;
}
RedisReply Int(int64_t v) {
  RedisReply r;
  r.type = RedisReply::Type::kInteger;
  r.integer = v;
  return r;
}
RedisReply Arr(std::vector<RedisReply> e) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  r.elements = std::move(e);
  return r;
}
RedisReply Err(std::string s) {
  RedisReply r;
  r.type = RedisReply::Type::kError;
  r.str = std::move(s);
  return r;
}

TEST(ClusterSlotsTest, Crc16IsTheXmodemVariant) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // the specification's check value
  EXPECT_EQ(Crc16(""), 0);
}

TEST(ClusterSlotsTest, KeySlotsFollowTheHashTagRules) {
  EXPECT_EQ(KeyHashSlot("123456789"), 0x31C3 % 16384);
  // A tag hashes alone.
  EXPECT_EQ(KeyHashSlot("{user1000}.following"), KeyHashSlot("user1000"));
  EXPECT_EQ(KeyHashSlot("{user1000}.followers"), KeyHashSlot("user1000"));
  // The first '{' and the first '}' after it.
  EXPECT_EQ(KeyHashSlot("foo{{bar}}zap"), KeyHashSlot("{bar"));
  EXPECT_EQ(KeyHashSlot("foo{bar}{zap}"), KeyHashSlot("bar"));
  // An empty tag, or none closed: the whole key.
  EXPECT_EQ(KeyHashSlot("foo{}{bar}"), Crc16("foo{}{bar}") % 16384);
  EXPECT_EQ(KeyHashSlot("foo{bar"), Crc16("foo{bar") % 16384);
  for (const char* key : {"a", "{a}b", "tickwheel", "x{y}"}) {
    EXPECT_LT(KeyHashSlot(key), kClusterSlots) << key;
    EXPECT_GE(KeyHashSlot(key), 0) << key;
  }
}

TEST(ClusterSlotsTest, ACommandsSlotIsItsFirstKeys) {
  EXPECT_EQ(CommandSlot({"EVALSHA", "abc", "2", "{ks:3}:due", "{ks:3}:x"}),
            KeyHashSlot("ks:3"));
  EXPECT_EQ(CommandSlot({"EVAL", "return 1", "0"}), std::nullopt);
  EXPECT_EQ(CommandSlot({"HLEN", "{ks:1}:state"}), KeyHashSlot("ks:1"));
  EXPECT_EQ(CommandSlot({"MULTI"}), std::nullopt);
  EXPECT_EQ(CommandSlot({"EXEC"}), std::nullopt);
  EXPECT_EQ(CommandSlot({"EVALSHA", "abc", "x", "k"}), std::nullopt);
}

TEST(ClusterSlotsTest, TheSlotMapComesFromClusterSlots) {
  const RedisReply reply = Arr({
      Arr({Int(0), Int(5460), Arr({Str("127.0.0.1"), Int(7000), Str("id0")}),
           Arr({Str("127.0.0.1"), Int(7003), Str("id3")})}),
      Arr({Int(5461), Int(10922), Arr({Str(""), Int(7001), Str("id1")})}),
      Arr({Int(10923), Int(16383), Arr({Str("127.0.0.1"), Int(7000)})}),
  });
  RedisEndpoint asked{"10.0.0.9", 7001, ""};
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(reply, asked);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->masters().size(), 2u);  // 7000 once, though it has two
  EXPECT_EQ(map->Master(0)->port, 7000);
  EXPECT_EQ(map->Master(5460)->port, 7000);
  EXPECT_EQ(map->Master(5461)->port, 7001);
  EXPECT_EQ(map->Master(5461)->host, "10.0.0.9");  // empty: the asked host
  EXPECT_EQ(map->Master(16383)->port, 7000);
  EXPECT_EQ(map->Master(16384), nullptr);
  EXPECT_EQ(map->Master(-1), nullptr);

  const RedisReply partial =
      Arr({Arr({Int(0), Int(9), Arr({Str("h"), Int(1)})})});
  absl::StatusOr<SlotMap> part = SlotMap::FromClusterSlots(partial, asked);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->Master(10), nullptr);  // served by no node

  EXPECT_FALSE(SlotMap::FromClusterSlots(Str("x"), asked).ok());
  EXPECT_FALSE(
      SlotMap::FromClusterSlots(
          Arr({Arr({Int(5), Int(16384), Arr({Str("h"), Int(1)})})}), asked)
          .ok());
  EXPECT_FALSE(
      SlotMap::FromClusterSlots(Arr({Arr({Int(0), Int(1)})}), asked).ok());
}

TEST(ClusterSlotsTest, MovedAndAskRepliesNameTheSlotAndTheNode) {
  std::optional<Redirect> moved =
      ParseRedirect(Err("MOVED 3999 127.0.0.1:6381"));
  ASSERT_TRUE(moved.has_value());
  EXPECT_FALSE(moved->ask);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->to.host, "127.0.0.1");
  EXPECT_EQ(moved->to.port, 6381);
  std::optional<Redirect> ask = ParseRedirect(Err("ASK 7 [::1]:7000"));
  ASSERT_TRUE(ask.has_value());
  EXPECT_TRUE(ask->ask);
  EXPECT_EQ(ask->to.host, "::1");
  EXPECT_EQ(ask->to.port, 7000);
  EXPECT_FALSE(ParseRedirect(Err("MOVED")).has_value());
  EXPECT_FALSE(ParseRedirect(Err("MOVED 16384 h:1")).has_value());
  EXPECT_FALSE(ParseRedirect(Err("MOVED 1 h")).has_value());
  EXPECT_FALSE(ParseRedirect(Err("ERR MOVED 1 h:1")).has_value());
  EXPECT_FALSE(ParseRedirect(Str("MOVED 1 h:1")).has_value());
}

TEST(ClusterSlotsTest, HostPortIsChecked) {
  EXPECT_TRUE(ParseHostPort("127.0.0.1:7000").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1").ok());
  EXPECT_FALSE(ParseHostPort(":7000").ok());
  EXPECT_FALSE(ParseHostPort("h:0").ok());
  EXPECT_FALSE(ParseHostPort("h:65536").ok());
  EXPECT_FALSE(ParseHostPort("h:7x").ok());
}

}  // namespace
}  // namespace tickwheel::durable::internal
