// tests/durable/durable_data_model_test.cc
// -----------------------------------------------------------------------------
// The parts of the data model that must not drift, since timers already in
// Redis depend on them: the shard of an id (a change would strand scheduled
// timers on shards no Cancel() or Schedule() looks at), the key names and
// their hash tags, the scripts' names (SHA-1, as Redis computes it), the
// parsing of the scripts' replies, and the arithmetic of Redis's clock as a
// process estimates it. No Redis needed.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/redis_clock.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/sha1.h"
#include "tickwheel/durable/shard_ops.h"

namespace tickwheel::durable::internal {
namespace {

TEST(DurableDataModelTest, Sha1MatchesTheStandardVectors) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha1Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(Sha1Hex(std::string(1000000, 'a')),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  for (int i = 0; i < kScriptCount; ++i) {
    const auto s = static_cast<Script>(i);
    EXPECT_EQ(ScriptSha(s), Sha1Hex(ScriptSource(s))) << ScriptName(s);
    EXPECT_EQ(ScriptSha(s).size(), 40u);
  }
}

TEST(DurableDataModelTest, TheShardOfAnIdNeverChanges) {
  // FNV-1a 64 modulo the shard count: golden values.
  EXPECT_EQ(ShardOf("order-1", 16), 13);
  EXPECT_EQ(ShardOf("order-2", 16), 4);
  EXPECT_EQ(ShardOf("charge:order-1234", 16), 14);
  EXPECT_EQ(ShardOf("a", 16), 12);
  EXPECT_EQ(ShardOf("", 16), 5);
  EXPECT_EQ(ShardOf("order-1", 1024), 109);
  EXPECT_EQ(ShardOf("order-2", 1024), 852);
  EXPECT_EQ(ShardOf("a", 3), 1);
  for (int shards : {1, 2, 7, 1024}) {
    for (int i = 0; i < 1000; ++i) {
      const int s = ShardOf("id-" + std::to_string(i), shards);
      ASSERT_GE(s, 0);
      ASSERT_LT(s, shards);
    }
  }
}

TEST(DurableDataModelTest, EveryKeyOfAShardCarriesItsHashTag) {
  const std::vector<ShardKeys> keys = MakeShardKeys("billing", 3);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[2].due, "{billing:2}:due");
  EXPECT_EQ(keys[2].leases, "{billing:2}:leases");
  EXPECT_EQ(keys[2].payload, "{billing:2}:payload");
  EXPECT_EQ(keys[2].state, "{billing:2}:state");
  EXPECT_EQ(keys[2].seq, "{billing:2}:seq");
  EXPECT_EQ(MetaKey("billing"), "{billing:0}:meta");
  EXPECT_TRUE(CheckKeyspace("billing-v2.eu").ok());
  EXPECT_FALSE(CheckKeyspace("a}b").ok());
  EXPECT_FALSE(CheckKeyspace("tab\there").ok());
}

TEST(DurableDataModelTest, ScriptCommandsNameTheShardsKeys) {
  const ShardKeys k = MakeShardKeys("ks", 1)[0];
  const ScheduleArgs entry{"id", 123, "payload", 5};
  const RedisCommand schedule = ScheduleCommand(k, false, {&entry, 1});
  ASSERT_EQ(schedule.size(), 20u);
  EXPECT_EQ(schedule[0], "EVALSHA");
  EXPECT_EQ(schedule[1], ScriptSha(Script::kSchedule));
  EXPECT_EQ(schedule[2], "8");
  EXPECT_EQ(schedule[3], "{ks:0}:due");
  EXPECT_EQ(schedule[8], "{ks:0}:dead");
  EXPECT_EQ(schedule[9], "{ks:0}:limit");
  EXPECT_EQ(schedule[10], "{ks:0}:error");
  EXPECT_EQ(schedule[11], "at");
  EXPECT_EQ(schedule[13], "0");  // no hint
  EXPECT_EQ(schedule[16], "id");
  EXPECT_EQ(schedule[17], "123");
  EXPECT_EQ(schedule[18], "payload");
  EXPECT_EQ(schedule[19], "5");
  const RedisCommand by_source = ScheduleCommand(
      k, true, {&entry, 1}, true,
      {.shard = 0, .window_us = 200000, .channel = "{ks}:hints"});
  EXPECT_EQ(by_source[0], "EVAL");
  EXPECT_EQ(by_source[1], ScriptSource(Script::kSchedule));
  EXPECT_EQ(by_source[11], "after");
  EXPECT_EQ(by_source[13], "200000");
  EXPECT_EQ(by_source[14], "0");
  EXPECT_EQ(by_source[15], "{ks}:hints");
  EXPECT_EQ(HintChannel("billing"), "{billing}:hints");
  const RedisCommand cancel = CancelCommand(k, "id");
  EXPECT_EQ(cancel[2], "8");
  EXPECT_EQ(cancel.back(), "id");
}

RedisReply Int(int64_t v) {
  RedisReply r;
  r.type = RedisReply::Type::kInteger;
  r.integer = v;
  return r;
}

RedisReply Str(std::string s) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.str = std::move(s);
  return r;
}

RedisReply Array(std::vector<RedisReply> e) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  r.elements = std::move(e);
  return r;
}

TEST(DurableDataModelTest, ClaimRepliesParseAndMalformedOnesAreInternal) {
  absl::StatusOr<ClaimReply> c = ParseClaimReply(
      Array({Int(1000), Int(2000), Int(1), Int(0), Str("t1"), Int(7), Int(1),
             Int(900), Int(950), Int(1), Int(31000), Str("p1")}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->now_us, 1000);
  EXPECT_EQ(c->next_us, 2000);
  EXPECT_TRUE(c->more);
  ASSERT_EQ(c->timers.size(), 1u);
  EXPECT_EQ(c->timers[0].id, "t1");
  EXPECT_EQ(c->timers[0].version, 7);
  EXPECT_EQ(c->timers[0].attempt, 1);
  EXPECT_EQ(c->timers[0].deadline_us, 900);
  EXPECT_EQ(c->timers[0].due_us, 950);
  EXPECT_TRUE(c->timers[0].started);
  EXPECT_EQ(c->timers[0].lease_us, 31000);
  EXPECT_EQ(c->timers[0].payload, "p1");

  EXPECT_TRUE(absl::IsInternal(ParseClaimReply(Int(3)).status()));
  EXPECT_TRUE(absl::IsInternal(
      ParseClaimReply(Array({Int(1), Int(2), Int(0), Int(0), Str("half")}))
          .status()));
  EXPECT_TRUE(ParseBatchReply(Array({Int(5), Int(1), Int(0)}), 2).ok());
  EXPECT_TRUE(
      absl::IsInternal(ParseBatchReply(Array({Int(5), Int(1)}), 2).status()));
}

TEST(DurableDataModelTest, RedisClockBoundsHoldBothWays) {
  RedisClock clock;
  EXPECT_FALSE(clock.known());
  // A script read TIME = 1'000'000 us between local 5'000'000 and
  // 5'400'000 ns: Redis was 1 s while local was somewhere in that window.
  clock.Observe(1'000'000, 5'000'000, 5'400'000);
  ASSERT_TRUE(clock.known());
  // 1 ms later (local 6'400'000): Redis reads 1'001'000 at least (had the
  // script run at the end of the window) and 1'001'400 at most.
  EXPECT_EQ(clock.AtLeastMicros(6'400'000), 1'001'000);
  EXPECT_EQ(clock.AtMostMicros(6'400'000), 1'001'400);
  EXPECT_EQ(clock.EstimateMicros(6'400'000), 1'001'200);
  // Surely at 1'002'000 from local 7'400'000; possibly from 7'000'000.
  EXPECT_EQ(clock.LocalWhenSurely(1'002'000), 7'400'000);
  EXPECT_EQ(clock.LocalWhenPossibly(1'002'000), 7'000'000);
  // A wider window does not replace a narrower recent one...
  clock.Observe(1'010'000, 14'000'000, 16'000'000);
  EXPECT_EQ(clock.LocalWhenSurely(1'002'000), 7'400'000);
  // ... but a narrower one does, and so does any sample once the kept one
  // is older than a second.
  clock.Observe(1'010'000, 15'000'000, 15'100'000);
  EXPECT_EQ(clock.LocalWhenSurely(1'010'000), 15'100'000);
  clock.Observe(3'000'000, 2'000'000'000, 2'010'000'000);
  EXPECT_EQ(clock.LocalWhenSurely(3'000'000), 2'010'000'000);
  // The ends of the range saturate instead of wrapping.
  EXPECT_EQ(clock.LocalWhenSurely(INT64_MAX), INT64_MAX);
  EXPECT_EQ(clock.LocalWhenPossibly(INT64_MAX - 5), INT64_MAX);
  EXPECT_EQ(clock.LocalWhenSurely(INT64_MIN), INT64_MIN);
  EXPECT_GT(clock.AtMostMicros(INT64_MAX), 0);
}

}  // namespace
}  // namespace tickwheel::durable::internal
