// tests/durable/durable_acl_auth_test.cc
// -----------------------------------------------------------------------------
// DurableTimerOptions::username: against a redis-server whose default user
// is off and whose one ACL user may touch only keys of one keyspace's hash
// tags, the right username and password connect, schedule and deliver
// (every key of that keyspace, the shard-count record included, lies under
// "{<keyspace>:"); a wrong password, a wrong user or no credentials are
// PermissionDenied naming what to check and never echoing the password; a
// keyspace outside the user's key pattern is PermissionDenied naming the ACL.

#include <atomic>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;

constexpr char kUser[] = "timers";
constexpr char kPassword[] = "wonder-land";

bool Mentions(const absl::Status& s, std::string_view text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

class DurableAclAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RedisServer::Options ro;
    // One ACL user for the keys of keyspace "tw-acl" only; the default user
    // (what a client without AUTH is) disabled.
    ro.extra_args = {"--user",     kUser, "on",   std::string(">") + kPassword,
                     "~{tw-acl:*", "&*",  "+@all"};
    ro.extra_args.insert(ro.extra_args.end(), {"--user", "default", "off"});
    ro.username = kUser;
    ro.password = kPassword;
    absl::StatusOr<std::unique_ptr<RedisServer>> r = RedisServer::Start(ro);
    ASSERT_TRUE(r.ok()) << r.status();
    redis_ = r->release();
  }
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
  }
  static DurableTimerOptions Options() {
    DurableTimerOptions o = TestOptions(*redis_, "tw-acl");
    o.username = kUser;
    o.password = kPassword;
    return o;
  }
  static RedisServer* redis_;
};
RedisServer* DurableAclAuthTest::redis_ = nullptr;

TEST_F(DurableAclAuthTest, TheAclUserConnectsSchedulesAndReceivesTimers) {
  absl::StatusOr<std::unique_ptr<DurableTimer>> timers =
      DurableTimer::Connect(Options());
  ASSERT_TRUE(timers.ok()) << timers.status();
  ASSERT_TRUE((*timers)->ScheduleAfter("a", absl::ZeroDuration(), "p").ok());
  std::atomic<int> seen{0};
  ASSERT_TRUE((*timers)
                  ->Start([&](const FiredTimer& t) {
                    if (t.id == "a" && t.payload == "p") ++seen;
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.load() == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return (*timers)->Pending().value() == 0; }));
  EXPECT_TRUE((*timers)->Stop().ok());
  EXPECT_EQ((*timers)->metrics().redis_errors, 0);
}

TEST_F(DurableAclAuthTest, AWrongPasswordIsPermissionDeniedWithoutEchoingIt) {
  DurableTimerOptions o = Options();
  o.password = "not-the-password";
  const absl::Status s = DurableTimer::Connect(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Mentions(s, "username and password")) << s;
  EXPECT_TRUE(Mentions(s, kUser)) << s;
  EXPECT_FALSE(Mentions(s, "not-the-password")) << s;
}

TEST_F(DurableAclAuthTest, AnUnknownUserIsPermissionDenied) {
  DurableTimerOptions o = Options();
  o.username = "nobody";
  const absl::Status s = DurableTimer::Connect(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_FALSE(Mentions(s, kPassword)) << s;
}

TEST_F(DurableAclAuthTest, NoCredentialsArePermissionDenied) {
  DurableTimerOptions o = Options();
  o.username.clear();
  o.password.clear();
  const absl::Status s = DurableTimer::Connect(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Mentions(s, "password")) << s;
}

TEST_F(DurableAclAuthTest, AKeyspaceBeyondTheUsersKeysIsPermissionDenied) {
  DurableTimerOptions o = Options();
  o.keyspace = "elsewhere";
  const absl::Status s = DurableTimer::Connect(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Mentions(s, "ACL")) << s;
}

}  // namespace
}  // namespace tickwheel::durable
