// tests/durable/durable_cluster_fanout_test.cc
// -----------------------------------------------------------------------------
// A cluster session sends every master its pipeline before it reads any
// reply (redis_session_cluster.cc). When one master fails in the middle of
// such a round, the replies the other masters owe are still unread on their
// connections; they must be dropped with it, or the next command there
// would read the previous round's reply as its own. Three masters without
// replicas (and without full coverage required, so the others go on
// serving), started by the test; one is stopped between rounds.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/testing/redis_cluster.h"

namespace tickwheel::durable {
namespace {

using testing::RedisCluster;

constexpr char kKeyspace[] = "tw-fanout";
constexpr int kShards = 12;

// The port of the master that holds each shard.
std::vector<int> ShardMasters(RedisCluster& cluster) {
  std::vector<int> out;
  for (const internal::ShardKeys& k :
       internal::MakeShardKeys(kKeyspace, kShards)) {
    absl::StatusOr<int> port =
        cluster.MasterOfSlot(internal::KeyHashSlot(k.due));
    out.push_back(port.value_or(-1));
  }
  return out;
}

std::vector<ScheduleEntry> OnEveryShard(const std::string& prefix,
                                        const std::string& payload) {
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 20 * kShards; ++i) {
    entries.push_back({prefix + std::to_string(i),
                       absl::Now() + absl::Hours(1),
                       payload,
                       {}});
  }
  return entries;
}

TEST(DurableClusterFanoutTest, AMasterFailingMidRoundLeavesNoStaleReplies) {
  RedisCluster::Options co;
  co.replicas = 0;
  // The other masters go on serving their slots when one is gone.
  co.extra_args = {"--cluster-require-full-coverage", "no"};
  absl::StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::Start(co);
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;

  DurableTimerOptions o;
  o.cluster_nodes = cluster.seeds();
  o.keyspace = kKeyspace;
  o.shards = kShards;
  o.redis_timeout = absl::Seconds(2);
  auto timers = DurableTimer::Connect(o);
  ASSERT_TRUE(timers.ok()) << timers.status();
  // Every pooled session the calls below use has a connection to every
  // master, with nothing owed on it.
  ASSERT_TRUE((*timers)->ScheduleMany(OnEveryShard("warm-", "w")).ok());

  const std::vector<int> masters = ShardMasters(cluster);
  const int victim = cluster.nodes()[1]->port();
  ASSERT_NE(std::count(masters.begin(), masters.end(), victim), 0);
  ASSERT_TRUE(cluster.nodes()[1]->Stop().ok());

  // A round over every master, one of them gone: the call fails.
  const absl::Status failed =
      (*timers)->ScheduleMany(OnEveryShard("mid-", "m"));
  EXPECT_FALSE(failed.ok());

  // The other masters answer each command with its own reply: a timer
  // scheduled there reads back with its own payload, again and again (the
  // pool hands out its sessions in turn).
  int checked = 0;
  for (int i = 0; checked < 40; ++i) {
    const std::string id = "after-" + std::to_string(i);
    const int shard = internal::ShardOf(id, kShards);
    if (masters[static_cast<size_t>(shard)] == victim) continue;
    const std::string payload = "payload of " + id;
    ASSERT_TRUE(
        (*timers)->Schedule(id, absl::Now() + absl::Hours(1), payload).ok())
        << id;
    absl::StatusOr<TimerInfo> info = (*timers)->Get(id);
    ASSERT_TRUE(info.ok()) << id << ": " << info.status();
    EXPECT_EQ(info->id, id);
    EXPECT_EQ(info->payload, payload);
    ++checked;
  }
}

}  // namespace
}  // namespace tickwheel::durable
