// tests/durable/durable_replica_ack_test.cc
// -----------------------------------------------------------------------------
// DurableTimerOptions::min_replicas_acked on one Redis and its replica, both
// started by the test: without a replica Connect() says so
// (FailedPrecondition); with one, every call that changes timers returns OK
// only once the replica has the write; with the replica gone, those calls
// are Unavailable, saying the write is on the master but may not survive a
// failover, and calling again with the same id is safe and turns OK when a
// replica is back. Delivery goes on meanwhile and counts the shortfalls.

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;

// A master (RedisTest's) and a replica of it, started by the test.
class DurableReplicaAckTest : public testing::RedisTest {
 protected:
  void StartReplica() {
    RedisServer::Options o;
    // No AOF of its own: a replica writing its first AOF refuses a clean
    // shutdown, and the master's copy is what the test checks.
    o.appendonly = false;
    o.extra_args = {"--replicaof", "127.0.0.1", std::to_string(redis_->port())};
    absl::StatusOr<std::unique_ptr<RedisServer>> r = RedisServer::Start(o);
    ASSERT_TRUE(r.ok()) << r.status();
    replica_ = *std::move(r);
    ASSERT_TRUE(WaitForLink()) << "the replica never linked to its master";
  }
  // Until the replica's ROLE says its link to the master is up.
  bool WaitForLink() {
    return WaitUntil([&] {
      absl::StatusOr<internal::RedisReply> role = replica_->Command({"ROLE"});
      return role.ok() && role->elements.size() >= 4 &&
             role->elements[0].str == "slave" &&
             role->elements[3].str == "connected";
    });
  }
  DurableTimerOptions Options() {
    DurableTimerOptions o = TestOptions(*redis_, "tw-wait");
    o.min_replicas_acked = 1;
    // Generous: a loaded machine (or a sanitizer build) can take hundreds
    // of milliseconds to get the replica's acknowledgement; each call with
    // the replica gone waits all of it.
    o.replica_ack_timeout = absl::Seconds(2);
    return o;
  }
  // Whether the replica holds a record for timer `id`.
  bool OnReplica(const std::string& id) {
    const internal::ShardKeys k = internal::MakeShardKeys(
        "tw-wait", 4)[static_cast<size_t>(internal::ShardOf(id, 4))];
    return replica_->Command({"HEXISTS", k.state, id}).value().AsInt() == 1;
  }

  std::unique_ptr<RedisServer> replica_;
};

TEST_F(DurableReplicaAckTest, WithoutAReplicaConnectIsFailedPrecondition) {
  const absl::StatusOr<std::unique_ptr<DurableTimer>> timers =
      DurableTimer::Connect(Options());
  ASSERT_EQ(timers.status().code(), absl::StatusCode::kFailedPrecondition)
      << timers.status();
  EXPECT_TRUE(
      absl::StrContains(timers.status().message(), "min_replicas_acked is 1"))
      << timers.status();
  // Without the option the same Redis serves.
  DurableTimerOptions o = Options();
  o.min_replicas_acked = 0;
  EXPECT_TRUE(DurableTimer::Connect(o).ok());
}

TEST_F(DurableReplicaAckTest, BadOptionsAreInvalidArgument) {
  DurableTimerOptions o = Options();
  o.min_replicas_acked = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(DurableTimer::Connect(o).status()));
  o.min_replicas_acked = 101;
  EXPECT_TRUE(absl::IsInvalidArgument(DurableTimer::Connect(o).status()));
  o = Options();
  o.replica_ack_timeout = absl::ZeroDuration();
  EXPECT_TRUE(absl::IsInvalidArgument(DurableTimer::Connect(o).status()));
  o.replica_ack_timeout = absl::InfiniteDuration();
  EXPECT_TRUE(absl::IsInvalidArgument(DurableTimer::Connect(o).status()));
}

TEST_F(DurableReplicaAckTest, WithAReplicaEveryChangeIsOnItWhenOkReturns) {
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  auto timers = DurableTimer::Connect(Options());
  ASSERT_TRUE(timers.ok()) << timers.status();
  DurableTimer& t = **timers;
  // WAIT returned only once the replica had each write: it is there now,
  // with no polling.
  ASSERT_TRUE(t.Schedule("a", absl::Now() + absl::Hours(1), "pa").ok());
  EXPECT_TRUE(OnReplica("a"));
  ASSERT_TRUE(t.ScheduleAfter("b", absl::Hours(1), "pb").ok());
  EXPECT_TRUE(OnReplica("b"));
  const std::vector<ScheduleEntry> entries = {
      {"c", absl::Now() + absl::Hours(1), "pc", {}},
      {"d", absl::Now() + absl::Hours(1), "pd", {}}};
  ASSERT_TRUE(t.ScheduleMany(entries).ok());
  EXPECT_TRUE(OnReplica("c"));
  EXPECT_TRUE(OnReplica("d"));
  EXPECT_TRUE(t.Cancel("a").value());
  EXPECT_FALSE(OnReplica("a"));
  EXPECT_FALSE(t.Cancel("a").value());
  // A delivery's acknowledgement reaches the replica too.
  Deliveries seen;
  ASSERT_TRUE(t.Start(seen.Recorder()).ok());
  ASSERT_TRUE(t.ScheduleAfter("now", absl::ZeroDuration(), "pn").ok());
  ASSERT_TRUE(WaitUntil([&] { return !OnReplica("now"); }));
  ASSERT_TRUE(t.Stop().ok());
  EXPECT_EQ(seen.Count("now"), 1);
}

TEST_F(DurableReplicaAckTest, WithTheReplicaGoneChangesAreUnavailableAndSafe) {
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  auto timers = DurableTimer::Connect(Options());
  ASSERT_TRUE(timers.ok()) << timers.status();
  DurableTimer& t = **timers;
  ASSERT_TRUE(t.Schedule("kept", absl::Now() + absl::Hours(1), "k").ok());
  ASSERT_TRUE(replica_->Kill().ok());

  // The write is on the master; the status says it may not survive a
  // failover, and what to do.
  const absl::Status s = t.Schedule("x", absl::Now() + absl::Hours(1), "px");
  ASSERT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "may not survive a failover"))
      << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "call Schedule() again")) << s;
  const absl::StatusOr<TimerInfo> x = t.Get("x");  // a read: no WAIT
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->payload, "px");
  const std::vector<ScheduleEntry> entries = {
      {"y", absl::Now() + absl::Hours(1), "py", {}}};
  EXPECT_TRUE(absl::IsUnavailable(t.ScheduleMany(entries)));
  const absl::StatusOr<bool> cancelled = t.Cancel("kept");
  ASSERT_TRUE(absl::IsUnavailable(cancelled.status())) << cancelled.status();
  EXPECT_TRUE(absl::StrContains(cancelled.status().message(),
                                "may not survive a failover"));
  EXPECT_TRUE(absl::IsNotFound(t.Get("kept").status()));  // on the master

  // Delivery goes on from the master, counting what the replicas missed.
  Deliveries seen;
  ASSERT_TRUE(t.Start(seen.Recorder()).ok());
  EXPECT_TRUE(
      absl::IsUnavailable(t.ScheduleAfter("due", absl::ZeroDuration(), "pd")));
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("due") == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return t.metrics().replica_shortfalls > 0; }));

  // The replica is back: the same calls again are OK, and the earlier
  // writes are on it (the cancel that now finds nothing to change still
  // waits for everything the master applied).
  ASSERT_TRUE(replica_->Restart().ok());
  ASSERT_TRUE(WaitForLink());
  ASSERT_TRUE(WaitUntil([&] {
    return t.Schedule("x", absl::Now() + absl::Hours(1), "px").ok();
  }));
  EXPECT_TRUE(OnReplica("x"));
  EXPECT_TRUE(t.ScheduleMany(entries).ok());
  EXPECT_FALSE(t.Cancel("kept").value());
  EXPECT_FALSE(OnReplica("kept"));
  ASSERT_TRUE(t.Stop().ok());
  EXPECT_EQ(seen.Count("due"), 1);
}

}  // namespace
}  // namespace tickwheel::durable
