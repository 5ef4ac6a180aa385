// tests/durable/durable_input_validation_test.cc
// -----------------------------------------------------------------------------
// What DurableTimer refuses, and how: malformed or oversized input is
// InvalidArgument with a message naming what was wrong, and nothing reaches
// Redis; a shard count that disagrees with the keyspace's is
// FailedPrecondition; a refused password is PermissionDenied; Start() and
// Stop() in the wrong order are FailedPrecondition. Nothing crashes, and no
// call leaves anything half done.

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::RedisServer;
using testing::TestOptions;

bool Mentions(const absl::Status& s, std::string_view text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

absl::Status ConnectStatus(DurableTimerOptions o) {
  return DurableTimer::Connect(std::move(o)).status();
}

class DurableInputValidationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisServer>> r = RedisServer::Start();
    ASSERT_TRUE(r.ok()) << r.status();
    redis_ = r->release();
  }
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
  }
  static RedisServer* redis_;
};
RedisServer* DurableInputValidationTest::redis_ = nullptr;

TEST_F(DurableInputValidationTest,
       BadOptionsAreInvalidArgumentNamingTheOption) {
  struct Case {
    const char* name;
    void (*change)(DurableTimerOptions&);
    const char* mentions;
  };
  const Case cases[] = {
      {"zero shards", [](DurableTimerOptions& o) { o.shards = 0; }, "shards"},
      {"too many shards", [](DurableTimerOptions& o) { o.shards = 1025; },
       "shards"},
      {"zero lease",
       [](DurableTimerOptions& o) { o.lease = absl::ZeroDuration(); }, "lease"},
      {"negative lease",
       [](DurableTimerOptions& o) { o.lease = absl::Seconds(-1); }, "lease"},
      {"infinite lease",
       [](DurableTimerOptions& o) { o.lease = absl::InfiniteDuration(); },
       "lease"},
      {"zero poll",
       [](DurableTimerOptions& o) { o.poll_interval = absl::ZeroDuration(); },
       "poll_interval"},
      {"zero timeout",
       [](DurableTimerOptions& o) { o.redis_timeout = absl::ZeroDuration(); },
       "redis_timeout"},
      {"no in-flight", [](DurableTimerOptions& o) { o.max_in_flight = 0; },
       "max_in_flight"},
      {"negative threads",
       [](DurableTimerOptions& o) { o.handler_threads = -1; },
       "handler_threads"},
      {"negative back-off",
       [](DurableTimerOptions& o) { o.retry_backoff = absl::Seconds(-1); },
       "retry_backoff"},
      {"empty keyspace", [](DurableTimerOptions& o) { o.keyspace = ""; },
       "keyspace"},
      {"brace in keyspace", [](DurableTimerOptions& o) { o.keyspace = "a{b"; },
       "keyspace"},
      {"long keyspace",
       [](DurableTimerOptions& o) { o.keyspace = std::string(129, 'k'); },
       "keyspace"},
      {"no scheme", [](DurableTimerOptions& o) { o.redis = "127.0.0.1:6379"; },
       "tcp://"},
      {"bad scheme", [](DurableTimerOptions& o) { o.redis = "http://x:1"; },
       "tcp://"},
      {"port zero", [](DurableTimerOptions& o) { o.redis = "tcp://h:0"; },
       "port"},
      {"port too big",
       [](DurableTimerOptions& o) { o.redis = "tcp://h:65536"; }, "port"},
      {"port not a number",
       [](DurableTimerOptions& o) { o.redis = "tcp://h:6x"; }, "port"},
      {"empty port", [](DurableTimerOptions& o) { o.redis = "tcp://h:"; },
       "port"},
      {"no host", [](DurableTimerOptions& o) { o.redis = "tcp://:6379"; },
       "host"},
      {"a path", [](DurableTimerOptions& o) { o.redis = "tcp://h:6379/0"; },
       "port"},
      {"relative unix path",
       [](DurableTimerOptions& o) { o.redis = "unix://redis.sock"; },
       "absolute"},
      {"unclosed bracket",
       [](DurableTimerOptions& o) { o.redis = "tcp://[::1:6379"; }, "'['"},
  };
  for (const Case& c : cases) {
    DurableTimerOptions o = TestOptions(*redis_);
    c.change(o);
    const absl::Status s = ConnectStatus(o);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.name << ": " << s;
    EXPECT_TRUE(Mentions(s, c.mentions)) << c.name << ": " << s;
  }
}

TEST_F(DurableInputValidationTest, AcceptedUriForms) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.redis = "redis://127.0.0.1:" + std::to_string(redis_->port());
  EXPECT_TRUE(ConnectStatus(o).ok());
  o.redis = "tcp://localhost:" + std::to_string(redis_->port());
  EXPECT_TRUE(ConnectStatus(o).ok());
}

TEST_F(DurableInputValidationTest, BadIdsAndPayloadsAreRefusedBeforeRedis) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_, "ids")).value();
  const std::string max_id(512, 'i');
  const std::string max_payload(512 * 1024, 'p');
  const absl::Time when = absl::Now() + absl::Hours(1);

  absl::Status s = timers->Schedule("", when);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Mentions(s, "empty"));
  s = timers->Schedule(max_id + "i", when);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Mentions(s, "513 bytes"));
  s = timers->ScheduleAfter("p", absl::Hours(1), max_payload + "p");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Mentions(s, "524289 bytes"));
  EXPECT_TRUE(absl::IsInvalidArgument(timers->Cancel("").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(timers->Cancel(max_id + "i").status()));
  EXPECT_EQ(timers->Pending().value(), 0);

  // The limits themselves are fine.
  EXPECT_TRUE(timers->Schedule(max_id, when, max_payload).ok());
  EXPECT_EQ(timers->Pending().value(), 1);
  EXPECT_TRUE(timers->Cancel(max_id).value());
}

TEST_F(DurableInputValidationTest, ScheduleManyWithOneBadEntrySchedulesNone) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_, "many")).value();
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back({"ok-" + std::to_string(i), absl::Now(), "x"});
  }
  entries.push_back({"big", absl::Now(), std::string(600 * 1024, 'x')});
  const absl::Status s = timers->ScheduleMany(entries);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Mentions(s, "entry 10")) << s;
  EXPECT_TRUE(Mentions(s, "nothing was scheduled")) << s;
  EXPECT_EQ(timers->Pending().value(), 0);
}

TEST_F(DurableInputValidationTest, ExtremeDeadlinesAreClampedNotRefused) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_, "extreme")).value();
  EXPECT_TRUE(timers->Schedule("past", absl::InfinitePast()).ok());
  EXPECT_TRUE(timers->Schedule("pre-epoch", absl::FromUnixSeconds(-5)).ok());
  EXPECT_TRUE(timers->Schedule("far", absl::InfiniteFuture()).ok());
  EXPECT_TRUE(timers->ScheduleAfter("neg", absl::Seconds(-10)).ok());
  EXPECT_TRUE(timers->ScheduleAfter("inf", absl::InfiniteDuration()).ok());
  EXPECT_EQ(timers->Pending().value(), 5);
  // Scores: the past is 0 (due at once), the far future 2^53 - 1 us.
  std::map<std::string, std::string> scores;
  for (int shard = 0; shard < 4; ++shard) {
    auto r = redis_->Command({"ZRANGE",
                              "{extreme:" + std::to_string(shard) + "}:due",
                              "0", "-1", "WITHSCORES"});
    ASSERT_TRUE(r.ok());
    for (size_t i = 0; i + 1 < r->elements.size(); i += 2) {
      scores[r->elements[i].str] = r->elements[i + 1].str;
    }
  }
  EXPECT_EQ(scores["past"], "0");
  EXPECT_EQ(scores["pre-epoch"], "0");
  EXPECT_EQ(scores["far"], "9007199254740991");
  EXPECT_EQ(scores["inf"], "9007199254740991");
  EXPECT_GT(std::stoll(scores["neg"]), 0);  // Redis's now
}

TEST_F(DurableInputValidationTest, AnotherShardCountIsFailedPrecondition) {
  DurableTimerOptions o = TestOptions(*redis_, "fixed-shards");
  o.shards = 8;
  ASSERT_TRUE(ConnectStatus(o).ok());
  o.shards = 16;
  const absl::Status s = ConnectStatus(o);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(Mentions(s, "8 shards")) << s;
  o.shards = 8;
  EXPECT_TRUE(ConnectStatus(o).ok());
}

TEST_F(DurableInputValidationTest, KeysOfAnotherTypeAreFailedPrecondition) {
  ASSERT_TRUE(redis_->Command({"SET", "{clash:0}:state", "not a hash"}).ok());
  DurableTimerOptions o = TestOptions(*redis_, "clash");
  o.shards = 1;
  auto timers = DurableTimer::Connect(o).value();
  const absl::Status s = timers->Schedule("x", absl::Now());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(Mentions(s, "keyspace")) << s;
  EXPECT_GE(timers->metrics().redis_errors, 1);
}

TEST_F(DurableInputValidationTest, StartAndStopInTheWrongOrder) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_, "order")).value();
  EXPECT_TRUE(absl::IsInvalidArgument(timers->Start(nullptr)));
  auto ok = [](const FiredTimer&) { return absl::OkStatus(); };
  ASSERT_TRUE(timers->Start(ok).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(timers->Start(ok)));
  EXPECT_TRUE(timers->Stop().ok());
  EXPECT_TRUE(timers->Stop().ok());  // idempotent
  EXPECT_TRUE(absl::IsFailedPrecondition(timers->Start(ok)));
  // Scheduling still works after Stop(): it only ends delivery here.
  EXPECT_TRUE(timers->ScheduleAfter("later", absl::Hours(1)).ok());

  auto never_started =
      DurableTimer::Connect(TestOptions(*redis_, "order")).value();
  EXPECT_TRUE(never_started->Stop().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(never_started->Start(ok)));
}

TEST_F(DurableInputValidationTest, StopFromAHandlerIsFailedPrecondition) {
  auto timers =
      DurableTimer::Connect(TestOptions(*redis_, "self-stop")).value();
  std::atomic<bool> done{false};
  absl::Status from_handler;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer&) {
                    from_handler = timers->Stop();
                    done = true;
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::ZeroDuration()).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return done.load(); }));
  EXPECT_TRUE(absl::IsFailedPrecondition(from_handler)) << from_handler;
  EXPECT_TRUE(timers->Stop().ok());
}

TEST(DurableAuthTest, TheRightPasswordConnectsAndAWrongOneIsPermissionDenied) {
  RedisServer::Options ro;
  ro.extra_args = {"--requirepass", "s3cret"};
  ro.password = "s3cret";
  absl::StatusOr<std::unique_ptr<RedisServer>> redis = RedisServer::Start(ro);
  ASSERT_TRUE(redis.ok()) << redis.status();
  DurableTimerOptions o = TestOptions(**redis);
  o.password = "s3cret";
  EXPECT_TRUE(ConnectStatus(o).ok());
  o.password = "wrong";
  absl::Status s = ConnectStatus(o);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Mentions(s, "password")) << s;
  o.password = "";
  s = ConnectStatus(o);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
}

}  // namespace
}  // namespace tickwheel::durable
