// tests/durable/durable_script_safety_test.cc
// -----------------------------------------------------------------------------
// The scripts never leave a shard half-changed: a Lua error undoes nothing
// that ran before it, so every script checks all of its arguments before its
// first write, and refuses bad ones with an error reply and no change. The
// back-off arithmetic is total: a zero back-off with any number of failures,
// or a huge attempt count, gives a finite due time, so a timer that fails for
// the thousandth time is delivered again rather than lost.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/shard_ops.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using internal::RedisReply;
using internal::Script;
using internal::ShardKeys;
using testing::Deliveries;
using testing::TestOptions;
using testing::WaitUntil;

// The fields of a :state record, "version:attempt:deadline:bytes:owner".
std::vector<std::string> Fields(const std::string& record) {
  std::vector<std::string> out(1);
  for (const char c : record) {
    if (c == ':' && out.size() < 5) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

class DurableScriptSafetyTest : public testing::RedisTest {
 protected:
  // Runs `script` on shard 0 of keyspace "ks" (one shard), by its source.
  RedisReply Run(Script script, std::vector<std::string> args) {
    const ShardKeys k = internal::MakeShardKeys("ks", 1)[0];
    absl::StatusOr<RedisReply> r =
        redis_->Command(internal::ScriptCommand(script, k, std::move(args),
                                                /*by_source=*/true));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : RedisReply{};
  }

  // Every key of the server with its type and contents, as text.
  std::string Snapshot() {
    std::vector<std::string> keys;
    const RedisReply all = *redis_->Command({"KEYS", "*"});
    for (const RedisReply& k : all.elements) keys.push_back(k.str);
    std::sort(keys.begin(), keys.end());
    std::string out;
    for (const std::string& key : keys) {
      const std::string type = redis_->Command({"TYPE", key})->str;
      out += key + " (" + type + "):";
      RedisReply r;
      if (type == "hash") {
        r = *redis_->Command({"HGETALL", key});
      } else if (type == "zset") {
        r = *redis_->Command({"ZRANGE", key, "0", "-1", "WITHSCORES"});
      } else {
        r = *redis_->Command({"GET", key});
      }
      std::vector<std::string> parts;
      for (const RedisReply& e : r.elements) parts.push_back(e.str);
      if (type == "hash") {
        std::vector<std::string> pairs;
        for (size_t i = 0; i + 1 < parts.size(); i += 2) {
          pairs.push_back(parts[i] + "=" + parts[i + 1]);
        }
        std::sort(pairs.begin(), pairs.end());
        parts = pairs;
      }
      if (r.type != RedisReply::Type::kArray) parts.push_back(r.str);
      for (const std::string& p : parts) out += " " + p;
      out += "\n";
    }
    return out;
  }
};

TEST_F(DurableScriptSafetyTest, EveryScriptRefusesBadArgumentsBeforeWriting) {
  const std::string max = std::to_string(internal::kMaxDeadlineMicros);
  // "a" due at once and claimed by "me" (so that it is held under a
  // version), "b" due in an hour.
  ASSERT_FALSE(
      Run(Script::kSchedule, {"after", max, "0", "0", "", "a", "0", "pa", "0"})
          .is_error());
  ASSERT_FALSE(Run(Script::kSchedule,
                   {"after", max, "0", "0", "", "b", "3600000000", "pb", "0"})
                   .is_error());
  const RedisReply claim = Run(
      Script::kClaim, {"0", "60000000", "10", "0", "0", "me", "1048576", "0"});
  ASSERT_FALSE(claim.is_error()) << claim.str;
  ASSERT_EQ(claim.elements.size(), 4u + 8u);
  const std::string v = std::to_string(claim.elements[5].AsInt());

  const std::vector<std::pair<Script, std::vector<std::string>>> bad = {
      {Script::kSchedule, {"at", max, "0", "0", "", "c", "soon", "p", "0"}},
      {Script::kSchedule, {"at", max, "0", "0", "", "c", "nan", "p", "0"}},
      {Script::kSchedule,
       {"at", max, "0", "0", "", "c", "1", "p", "0", "d", "2"}},
      {Script::kSchedule, {"at", max, "0", "0", "", "c", "1", "p", "-1"}},
      {Script::kSchedule, {"sometime", max, "0", "0", "", "c", "1", "p", "0"}},
      {Script::kSchedule, {"at", max, "0", "0", "", "", "1", "p", "0"}},
      {Script::kSchedule, {"at", max, "-1", "0", "", "c", "1", "p", "0"}},
      {Script::kSchedule, {"at", max, "1000", "x", "ch", "c", "1", "p", "0"}},
      {Script::kCancel, {""}},
      {Script::kClaim, {"0", "soon", "10", "0", "0", "me", "1048576", "0"}},
      {Script::kClaim, {"0", "60000000", "-1", "0", "0", "me", "1048576", "0"}},
      {Script::kStart, {"60000000", "a", "x", "0"}},
      {Script::kStart, {"60000000", "a", v}},
      {Script::kAck, {"a", v, "b"}},
      {Script::kAck, {"a", "nan"}},
      {Script::kFail, {"nan", "1", "0", "a", v, "e"}},
      {Script::kFail, {"1", "1", "0", "a", v}},
      {Script::kFail, {"0", "-5", "0", "a", v, "e"}},
      {Script::kDeadOp, {"revive", "after", "0", "-1", "10"}},
      {Script::kDeadOp, {"retry", "after", "0", "-1", "0"}},
      {Script::kDeadOp, {"purge", "at", "0", "-1", "10", ""}},
      {Script::kRelease, {"a", v, "nan", "0"}},
      {Script::kRelease, {"a", v, "0", "2"}},
      {Script::kRelease, {"a", v, "inf", "0"}},
      {Script::kRenew, {"0", "a", v}},
      {Script::kRenew, {"60000000", "a", "1.5"}},
  };
  for (const auto& [script, args] : bad) {
    std::string call(internal::ScriptName(script));
    for (const std::string& a : args) call += " '" + a + "'";
    const std::string before = Snapshot();
    const RedisReply r = Run(script, args);
    EXPECT_TRUE(r.is_error()) << call;
    EXPECT_EQ(Snapshot(), before) << call << " changed the shard";
  }
  // And the shard still works: "a" is held, "b" waits.
  const RedisReply ack = Run(Script::kAck, {"a", v});
  ASSERT_FALSE(ack.is_error()) << ack.str;
  EXPECT_EQ(ack.elements[1].AsInt(), 1);
}

// With retry_backoff = 0, 2^(attempt - 1) overflows a double at attempt
// 1,025, and 0 x infinity is not a number: the due time must stay finite, and
// the timer must come back.
TEST_F(DurableScriptSafetyTest, AZeroBackOffNeverLosesATimerThatKeepsFailing) {
  DurableTimerOptions o = TestOptions(*redis_, "ks");
  o.shards = 1;
  o.retry_backoff = absl::ZeroDuration();
  o.max_retry_backoff = absl::ZeroDuration();
  auto timers = DurableTimer::Connect(o).value();
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::ZeroDuration(), "p").ok());
  // As if it had failed 1,024 times already: "version:attempt:deadline:
  // bytes:owner".
  const ShardKeys k = internal::MakeShardKeys("ks", 1)[0];
  const std::string record = redis_->Command({"HGET", k.state, "x"})->str;
  std::vector<std::string> f = Fields(record);
  ASSERT_EQ(f.size(), 5u) << record;
  f[1] = "1024";
  ASSERT_TRUE(redis_
                  ->Command({"HSET", k.state, "x",
                             f[0] + ":" + f[1] + ":" + f[2] + ":" + f[3] + ":"})
                  .ok());

  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    return t.attempt <= 1026 ? absl::UnavailableError("again")
                                             : absl::OkStatus();
                  })
                  .ok());
  EXPECT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }))
      << "lost: " << seen.Total() << " deliveries, state "
      << redis_->Command({"HGET", k.state, "x"})->str << ", due score "
      << redis_->Command({"ZSCORE", k.due, "x"})->str;
  ASSERT_TRUE(timers->Stop().ok());
  ASSERT_EQ(seen.Total(), 3u);
  EXPECT_EQ(seen.All()[0].attempt, 1025);
  EXPECT_EQ(seen.All()[2].attempt, 1027);
  EXPECT_EQ(timers->metrics().acknowledged, 1);
}

// A huge attempt count with a non-zero back-off is capped at the maximum.
TEST_F(DurableScriptSafetyTest, AHugeAttemptBacksOffByTheMaximum) {
  const std::string max = std::to_string(internal::kMaxDeadlineMicros);
  ASSERT_FALSE(
      Run(Script::kSchedule, {"after", max, "0", "0", "", "a", "0", "", "0"})
          .is_error());
  const RedisReply claim = Run(
      Script::kClaim, {"0", "60000000", "10", "0", "1", "me", "1048576", "0"});
  ASSERT_EQ(claim.elements.size(), 4u + 8u);
  const std::string v = std::to_string(claim.elements[5].AsInt());
  const ShardKeys k = internal::MakeShardKeys("ks", 1)[0];
  std::vector<std::string> f =
      Fields(redis_->Command({"HGET", k.state, "a"})->str);
  ASSERT_EQ(f.size(), 5u);
  ASSERT_TRUE(redis_
                  ->Command({"HSET", k.state, "a",
                             f[0] + ":5000:" + f[2] + ":" + f[3] + ":" + f[4]})
                  .ok());
  const RedisReply fail =
      Run(Script::kFail, {"1000000", "7000000", "0", "a", v, "e"});
  ASSERT_FALSE(fail.is_error()) << fail.str;
  ASSERT_EQ(fail.elements[1].AsInt(), 1);
  const int64_t now = fail.elements[0].AsInt();
  EXPECT_EQ(redis_->Command({"ZSCORE", k.due, "a"})->AsInt(), now + 7000000);
}

}  // namespace
}  // namespace tickwheel::durable
