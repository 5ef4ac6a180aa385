// tests/durable/durable_redis_client_test.cc
// -----------------------------------------------------------------------------
// durable/'s own Redis client on a real redis-server: pipelines are binary
// safe and come back in order; a unix socket works; a Redis that hangs makes
// a call return Unavailable once its deadline passes and breaks the
// connection; a session reconnects by itself after a restart (counting it,
// and without a failed call when the old connection was idle) and loads the
// scripts again when Redis has forgotten them (NOSCRIPT);
// error replies become statuses that say what to do.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/redis_session.h"
#include "tickwheel/durable/scripts.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/test_util.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::internal {
namespace {

using testing::RedisServer;

int64_t In(absl::Duration d) {
  return RealClock::MonotonicNanos() + absl::ToInt64Nanoseconds(d);
}

RedisEndpoint Local(const RedisServer& r) {
  return {"127.0.0.1", r.port(), ""};
}

TEST(DurableRedisClientTest, PipelinesAreBinarySafeAndInOrder) {
  auto redis = RedisServer::Start().value();
  auto conn =
      RedisConnection::Open(Local(*redis), "", "", In(absl::Seconds(5)));
  ASSERT_TRUE(conn.ok()) << conn.status();
  const std::string value("a\0b\r\nc", 6);
  std::vector<RedisCommand> cmds = {{"SET", "k", value},
                                    {"GET", "k"},
                                    {"INCR", "n"},
                                    {"NOSUCHCOMMAND"},
                                    {"GET", "missing"}};
  std::vector<RedisReply> replies;
  ASSERT_TRUE((*conn)->Pipeline(cmds, &replies, In(absl::Seconds(5))).ok());
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_EQ(replies[0].str, "OK");
  EXPECT_EQ(replies[1].str, value);
  EXPECT_EQ(replies[2].AsInt(), 1);
  EXPECT_TRUE(replies[3].is_error());
  EXPECT_EQ(replies[4].type, RedisReply::Type::kNil);
  EXPECT_FALSE((*conn)->broken());
}

TEST(DurableRedisClientTest, AUnixSocketWorks) {
  RedisServer::Options ro;
  // A socket path must be short (108 bytes): /tmp, not the test's folder.
  std::string dir = "/tmp/tw-sock-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string sock = dir + "/redis.sock";
  ro.extra_args = {"--unixsocket", sock, "--unixsocketperm", "700"};
  auto redis = RedisServer::Start(ro).value();
  DurableTimerOptions o = testing::TestOptions(*redis);
  o.redis = "unix://" + sock;
  auto timers = DurableTimer::Connect(o);
  ASSERT_TRUE(timers.ok()) << timers.status();
  EXPECT_TRUE((*timers)->ScheduleAfter("x", absl::Hours(1)).ok());
  EXPECT_EQ((*timers)->Pending().value(), 1);
  timers->reset();
  redis.reset();
  std::filesystem::remove_all(dir);
}

TEST(DurableRedisClientTest, AHungRedisTimesOutAndBreaksTheConnection) {
  auto redis = RedisServer::Start().value();
  auto conn =
      RedisConnection::Open(Local(*redis), "", "", In(absl::Seconds(5)));
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(redis->Pause().ok());
  const RedisCommand ping = {"PING"};
  std::vector<RedisReply> replies;
  const absl::Time start = absl::Now();
  const absl::Status s =
      (*conn)->Pipeline({&ping, 1}, &replies, In(absl::Milliseconds(300)));
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(redis->Resume().ok());
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(10));  // generous: a shared machine
  EXPECT_TRUE((*conn)->broken());
}

TEST(DurableRedisClientTest, ASessionReconnectsAndReloadsScripts) {
  auto redis = RedisServer::Start().value();
  SessionOptions options{Local(*redis), "", 2'000'000'000};
  RedisCounters counters;
  RedisSession session(&options, &counters);
  const RedisCommand meta = {
      "EVALSHA", ScriptSha(Script::kMeta), "1", "{s:0}:meta", "4", "1"};
  std::vector<RedisReply> replies;
  ASSERT_TRUE(session.Run({&meta, 1}, &replies, In(absl::Seconds(5))).ok());
  EXPECT_EQ(replies[0].elements[0].AsInt(), 4);
  EXPECT_EQ(counters.reconnects.load(), 0);

  // Redis forgets its scripts (SCRIPT FLUSH) while the connection stays up.
  ASSERT_TRUE(redis->Command({"SCRIPT", "FLUSH"}).ok());
  ASSERT_TRUE(session.Run({&meta, 1}, &replies, In(absl::Seconds(5))).ok());
  EXPECT_FALSE(replies[0].is_error()) << replies[0].str;

  // Redis restarts while the session is idle: the next call sees the
  // closed connection before it sends anything, reconnects, loads the
  // scripts and succeeds, without a failed call.
  ASSERT_TRUE(redis->Stop().ok());
  ASSERT_TRUE(redis->Restart().ok());
  ASSERT_TRUE(session.Run({&meta, 1}, &replies, In(absl::Seconds(5))).ok());
  EXPECT_FALSE(replies[0].is_error()) << replies[0].str;
  EXPECT_EQ(counters.reconnects.load(), 1);
  EXPECT_EQ(counters.errors.load(), 0);

  // Redis is gone: a call fails, and counts.
  ASSERT_TRUE(redis->Kill().ok());
  EXPECT_TRUE(absl::IsUnavailable(
      session.Run({&meta, 1}, &replies, In(absl::Seconds(5)))));
  EXPECT_GE(counters.errors.load(), 1);
  ASSERT_TRUE(redis->Restart().ok());
  ASSERT_TRUE(session.Run({&meta, 1}, &replies, In(absl::Seconds(5))).ok());
  EXPECT_EQ(counters.reconnects.load(), 2);
}

TEST(DurableRedisClientTest, ErrorRepliesSayWhatToDo) {
  const RedisEndpoint e{"127.0.0.1", 1, ""};
  auto error = [](std::string text) {
    RedisReply r;
    r.type = RedisReply::Type::kError;
    r.str = std::move(text);
    return r;
  };
  EXPECT_TRUE(absl::IsUnavailable(ReplyErrorStatus(
      error("LOADING Redis is loading the dataset in memory"), "x", e)));
  const absl::Status readonly = ReplyErrorStatus(
      error("READONLY You can't write against a read only replica."), "x", e);
  EXPECT_TRUE(absl::IsUnavailable(readonly));
  EXPECT_NE(std::string(readonly.message()).find("primary"), std::string::npos);
  EXPECT_TRUE(absl::IsResourceExhausted(ReplyErrorStatus(
      error("OOM command not allowed when used memory > 'maxmemory'."), "x",
      e)));
  EXPECT_TRUE(absl::IsPermissionDenied(
      ReplyErrorStatus(error("NOAUTH Authentication required."), "x", e)));
  EXPECT_TRUE(absl::IsFailedPrecondition(ReplyErrorStatus(
      error("WRONGTYPE Operation against a key holding the wrong kind"), "x",
      e)));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ReplyErrorStatus(error("MOVED 3999 127.0.0.1:6381"), "x", e)));
  EXPECT_TRUE(absl::IsInternal(ReplyErrorStatus(error("ERR what"), "x", e)));
  // A code is a whole word.
  EXPECT_FALSE(error("OOMPH").IsErrorCode("OOM"));
}

}  // namespace
}  // namespace tickwheel::durable::internal
