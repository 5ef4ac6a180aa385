// tests/durable/durable_cluster_test.cc
// -----------------------------------------------------------------------------
// DurableTimer on a real Redis Cluster (three masters, three replicas, started
// by the test): the client computes the slot of every shard as the cluster
// does; timers on every shard, spread over all masters, are delivered once
// with their data, as on one Redis; a slot that moves to another master in
// the middle of a run (MOVED) loses nothing; a schedule hint from any master
// reaches a listener subscribed to one node; and a redirect loop ends in a
// clear Unavailable rather than a hang.

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/testing/redis_cluster.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::RedisCluster;
using testing::WaitUntil;

// One cluster for the whole binary (starting one takes seconds); every test
// has a keyspace of its own.
class DurableClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> c = RedisCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = c->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static DurableTimerOptions Options(std::string keyspace) {
    DurableTimerOptions o;
    o.cluster_nodes = cluster_->seeds();
    o.keyspace = std::move(keyspace);
    o.shards = 16;
    o.lease = absl::Seconds(2);
    o.poll_interval = absl::Milliseconds(50);
    o.retry_backoff = absl::Milliseconds(100);
    o.redis_timeout = absl::Seconds(2);
    o.handler_threads = 4;
    return o;
  }
  static int ShardSlot(const std::string& keyspace, int shard) {
    return internal::KeyHashSlot(
        internal::MakeShardKeys(keyspace, shard + 1).back().due);
  }
  // An id of `shard` (of `shards`).
  static std::string IdOn(int shard, int shards, const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string id = prefix + std::to_string(i);
      if (internal::ShardOf(id, shards) == shard) return id;
    }
  }

  static RedisCluster* cluster_;
};
RedisCluster* DurableClusterTest::cluster_ = nullptr;

TEST_F(DurableClusterTest, ShardSlotsAreTheClustersKeySlots) {
  const int port = cluster_->nodes()[0]->port();
  for (const internal::ShardKeys& k : internal::MakeShardKeys("tw-slots", 64)) {
    for (const std::string& key : {k.due, k.state, k.dead}) {
      auto r = cluster_->Command(port, {"CLUSTER", "KEYSLOT", key});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(internal::KeyHashSlot(key), r->AsInt()) << key;
    }
  }
}

TEST_F(DurableClusterTest, TimersOnEveryShardAreDeliveredOnceWithTheirData) {
  const std::string ks = "tw-spread";
  // The shards are spread over every master: the test reaches them all.
  std::set<int> masters;
  for (int s = 0; s < 16; ++s) {
    masters.insert(cluster_->MasterOfSlot(ShardSlot(ks, s)).value());
  }
  EXPECT_EQ(masters.size(), static_cast<size_t>(RedisCluster::kMasters));

  auto timers = DurableTimer::Connect(Options(ks));
  ASSERT_TRUE(timers.ok()) << timers.status();
  const absl::Time now = absl::Now();
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 300; ++i) {
    entries.push_back({"many-" + std::to_string(i),
                       now + absl::Milliseconds(i % 50),
                       std::string(static_cast<size_t>(i % 7), 'p')});
  }
  entries.push_back({"many-0", now, "last wins"});  // a duplicate id
  ASSERT_TRUE((*timers)->ScheduleMany(entries).ok());
  const absl::Time deadline = now + absl::Milliseconds(200);
  ASSERT_TRUE((*timers)->Schedule("a", deadline, "payload-a").ok());
  ASSERT_TRUE((*timers)->ScheduleAfter("b", absl::Milliseconds(100), "b").ok());
  ASSERT_TRUE((*timers)->Schedule("gone", deadline + absl::Hours(1)).ok());
  EXPECT_TRUE((*timers)->Cancel("gone").value());
  EXPECT_EQ((*timers)->Pending().value(), 302);

  Deliveries seen;
  ASSERT_TRUE((*timers)->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 302; }));
  ASSERT_TRUE(WaitUntil([&] { return (*timers)->Pending().value() == 0; }));
  ASSERT_TRUE((*timers)->Stop().ok());
  EXPECT_EQ(seen.Total(), 302u);
  for (const FiredTimer& t : seen.All()) {
    EXPECT_EQ(t.attempt, 1) << t.id;
    if (t.id == "many-0") EXPECT_EQ(t.payload, "last wins");
    if (t.id == "a") {
      EXPECT_EQ(t.payload, "payload-a");
      EXPECT_LE(absl::AbsDuration(t.deadline - deadline),
                absl::Microseconds(1));
    }
  }
  const DurableMetrics m = (*timers)->metrics();
  EXPECT_EQ(m.scheduled, 304);
  EXPECT_EQ(m.delivered, 302);
  EXPECT_EQ(m.acknowledged, 302);
  EXPECT_EQ(m.redelivered, 0);
}

// A schedule hint PUBLISHed by a script on any master reaches a listener
// subscribed to one node (the cluster bus carries classic Pub/Sub): with a
// 10 s poll, timers on shards of every master that another DurableTimer
// schedules 100 ms ahead are delivered long before the next poll.
TEST_F(DurableClusterTest, HintsFromEveryMasterReachOneSubscription) {
  const std::string ks = "tw-hints";
  DurableTimerOptions o = Options(ks);
  o.poll_interval = absl::Seconds(10);
  o.lease = absl::Seconds(20);
  auto deliverer = DurableTimer::Connect(o);
  auto scheduler = DurableTimer::Connect(o);
  ASSERT_TRUE(deliverer.ok()) << deliverer.status();
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  Deliveries seen;
  ASSERT_TRUE((*deliverer)->Start(seen.Recorder()).ok());
  // PUBSUB NUMSUB counts a node's own subscribers: one in the cluster.
  ASSERT_TRUE(WaitUntil([&] {
    int64_t n = 0;
    for (const auto& node : cluster_->nodes()) {
      auto r = cluster_->Command(
          node->port(), {"PUBSUB", "NUMSUB", internal::HintChannel(ks)});
      if (r.ok() && r->elements.size() == 2) n += r->elements[1].AsInt();
    }
    return n == 1;
  }));
  absl::SleepFor(absl::Milliseconds(500));  // its first look is done
  // One timer on a shard of each master.
  std::map<int, std::string> by_master;
  for (int s = 0; s < 16; ++s) {
    const int master = cluster_->MasterOfSlot(ShardSlot(ks, s)).value();
    if (!by_master.contains(master)) by_master[master] = IdOn(s, 16, "hint-");
  }
  ASSERT_EQ(by_master.size(), static_cast<size_t>(RedisCluster::kMasters));
  for (const auto& [master, id] : by_master) {
    ASSERT_TRUE((*scheduler)->ScheduleAfter(id, absl::Milliseconds(100)).ok());
    EXPECT_TRUE(WaitUntil([&] { return seen.Count(id) > 0; }, absl::Seconds(5)))
        << id << " on the master at port " << master;
  }
  ASSERT_TRUE((*deliverer)->Stop().ok());
  EXPECT_EQ(seen.Total(), by_master.size());
}

// With min_replicas_acked = 1 every master's replica confirms each change:
// Connect() checks every master holding a shard, and the calls never fall
// short (the failover itself is durable_cluster_failover_test's).
TEST_F(DurableClusterTest, WithMinReplicasAckedEveryReplicaConfirms) {
  DurableTimerOptions o = Options("tw-wait");
  o.min_replicas_acked = 1;
  auto timers = DurableTimer::Connect(o);
  ASSERT_TRUE(timers.ok()) << timers.status();
  const absl::Time now = absl::Now();
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 64; ++i) {
    const std::string id = "w-" + std::to_string(i);
    entries.push_back({id, now + absl::Milliseconds(i), id, {}});
  }
  ASSERT_TRUE((*timers)->ScheduleMany(entries).ok());
  ASSERT_TRUE((*timers)->ScheduleAfter("one", absl::Milliseconds(10)).ok());
  ASSERT_TRUE((*timers)->Schedule("gone", now + absl::Hours(1)).ok());
  EXPECT_TRUE((*timers)->Cancel("gone").value());
  EXPECT_FALSE((*timers)->Cancel("gone").value());
  Deliveries seen;
  ASSERT_TRUE((*timers)->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 65; }));
  ASSERT_TRUE(WaitUntil([&] { return (*timers)->Pending().value() == 0; }));
  ASSERT_TRUE((*timers)->Stop().ok());
}

// MoveSlot() starts once every node agrees on the config epochs and returns
// once every node names the new owner: moving slots back to back otherwise
// can leave the cluster itself with two masters redirecting to each other
// (redis_cluster.h), which no client can route around.
TEST_F(DurableClusterTest, ASlotMovedMidRunLosesNothing) {
  const std::string ks = "tw-moved";
  auto timers = DurableTimer::Connect(Options(ks));
  ASSERT_TRUE(timers.ok()) << timers.status();
  Deliveries seen;
  ASSERT_TRUE((*timers)->Start(seen.Recorder()).ok());
  // Timers due over the next second and a half, on every shard.
  const absl::Time now = absl::Now();
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    const std::string id = "before-" + std::to_string(i);
    ASSERT_TRUE((*timers)
                    ->Schedule(id, now + absl::Milliseconds(300 + 6 * i), id)
                    .ok());
    ids.insert(id);
  }
  // Move half the shards' slots, each to the next master, while the
  // poller claims and acknowledges on them.
  const std::vector<int> masters = cluster_->MasterPorts().value();
  ASSERT_EQ(masters.size(), static_cast<size_t>(RedisCluster::kMasters));
  std::vector<int> moved;
  for (int s = 0; s < 16; s += 2) {
    const int slot = ShardSlot(ks, s);
    const int from = cluster_->MasterOfSlot(slot).value();
    size_t k = 0;
    while (masters[k] != from) ++k;
    const int to = masters[(k + 1) % masters.size()];
    const absl::Status st = cluster_->MoveSlot(slot, to);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(cluster_->MasterOfSlot(slot).value(), to);
    moved.push_back(s);
  }
  // Scheduling on a moved shard goes to its old master first (this
  // timer's sessions still hold the old map), which answers MOVED. While
  // the cluster's nodes still converge on the new owner a call may be
  // Unavailable after max_cluster_redirects, and its contract is to call
  // again.
  for (const int s : moved) {
    const std::string id = IdOn(s, 16, "after-" + std::to_string(s) + "-");
    ASSERT_TRUE(WaitUntil([&] {
      const absl::Status st = (*timers)->Schedule(id, absl::Now(), id);
      EXPECT_TRUE(st.ok() || absl::IsUnavailable(st)) << st;
      return st.ok();
    })) << id;
    ids.insert(id);
  }
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == ids.size(); }));
  ASSERT_TRUE(WaitUntil([&] { return (*timers)->Pending().value() == 0; }));
  ASSERT_TRUE((*timers)->Stop().ok());
  for (const FiredTimer& t : seen.All()) {
    EXPECT_EQ(ids.count(t.id), 1u) << t.id;
    EXPECT_EQ(t.payload, t.id);
  }
}

TEST_F(DurableClusterTest, ARedirectLoopEndsInUnavailable) {
  // A slot left MIGRATING on its master, with no node importing it: the
  // master sends a command on missing keys to the other node (ASK), which
  // sends it back (MOVED), for ever.
  const std::string ks = "tw-loop";
  DurableTimerOptions o = Options(ks);
  o.max_cluster_redirects = 3;
  auto timers = DurableTimer::Connect(o);
  ASSERT_TRUE(timers.ok()) << timers.status();
  const int shard = 1;
  const int slot = ShardSlot(ks, shard);
  const int from = cluster_->MasterOfSlot(slot).value();
  int to = 0;
  const std::vector<int> masters = cluster_->MasterPorts().value();
  for (const int p : masters) {
    if (p != from) to = p;
  }
  const std::string to_id =
      cluster_->Command(to, {"CLUSTER", "MYID"}).value().str;
  ASSERT_FALSE(cluster_
                   ->Command(from, {"CLUSTER", "SETSLOT", std::to_string(slot),
                                    "MIGRATING", to_id})
                   .value()
                   .is_error());
  const absl::Status s =
      (*timers)->Schedule(IdOn(shard, 16, "loop-"), absl::Now());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("redirect"), absl::string_view::npos) << s;
  ASSERT_FALSE(cluster_
                   ->Command(from, {"CLUSTER", "SETSLOT", std::to_string(slot),
                                    "STABLE"})
                   .value()
                   .is_error());
  // Stable again: the same call goes through.
  EXPECT_TRUE((*timers)->Schedule(IdOn(shard, 16, "loop-"), absl::Now()).ok());
}

}  // namespace
}  // namespace tickwheel::durable
