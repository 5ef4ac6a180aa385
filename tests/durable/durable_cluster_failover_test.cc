// tests/durable/durable_cluster_failover_test.cc
// -----------------------------------------------------------------------------
// Failover without loss, on a real Redis Cluster of the test's own (three
// masters, three replicas, a short cluster-node-timeout): while several
// threads stream Schedule() calls over every shard, and so every master, one
// master is SIGKILLed and the cluster promotes its replica. With
// min_replicas_acked = 1, every Schedule() that returned OK is delivered at
// least once, with its payload and deadline, and never before that deadline
// on Redis's clock; the calls that fail meanwhile are Unavailable or
// DeadlineExceeded with a message, and calling them again with the same id
// once the cluster has healed (the killed node back as a replica) schedules
// them, and they are delivered too.

#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/testing/redis_cluster.h"
#include "tickwheel/durable/testing/test_util.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable {
namespace {

using testing::RedisCluster;
using testing::WaitUntil;

constexpr int kShards = 16;
constexpr int kProducers = 4;
const std::string kKeyspace = "tw-failover";

// One Schedule() that returned OK, or one that failed.
struct Scheduled {
  std::string id;
  absl::Time deadline;
  std::string payload;
  int shard = 0;
  int phase = 0;  // 0: before the kill, 1: until promoted, 2: after
};

// One delivery, with Redis's clock read inside the handler.
struct Seen {
  FiredTimer timer;
  int64_t redis_now_us = 0;
};

// Redis's clock (TIME) on a connection of the handlers' own: the
// fixture's connections are the main thread's. Thread-compatible.
class RedisClock {
 public:
  explicit RedisClock(int port) : port_(port) {}
  absl::StatusOr<int64_t> NowMicros() {
    const int64_t deadline = RealClock::MonotonicNanos() + 5'000'000'000;
    if (conn_ == nullptr || conn_->broken()) {
      absl::StatusOr<std::unique_ptr<internal::RedisConnection>> c =
          internal::RedisConnection::Open({"127.0.0.1", port_, ""}, "", "",
                                          deadline);
      if (!c.ok()) return c.status();
      conn_ = *std::move(c);
    }
    const internal::RedisCommand time = {"TIME"};
    std::vector<internal::RedisReply> r;
    if (absl::Status s = conn_->Pipeline({&time, 1}, &r, deadline); !s.ok()) {
      return s;
    }
    if (r[0].elements.size() != 2) {
      return absl::InternalError("bad TIME reply");
    }
    return r[0].elements[0].AsInt() * 1'000'000 + r[0].elements[1].AsInt();
  }

 private:
  int port_;
  std::unique_ptr<internal::RedisConnection> conn_;
};

int ShardSlot(int shard) {
  return internal::KeyHashSlot(
      internal::MakeShardKeys(kKeyspace, kShards)[static_cast<size_t>(shard)]
          .due);
}

DurableTimerOptions Options(const RedisCluster& cluster) {
  DurableTimerOptions o;
  o.cluster_nodes = cluster.seeds();
  o.keyspace = kKeyspace;
  o.shards = kShards;
  o.lease = absl::Seconds(2);
  o.poll_interval = absl::Milliseconds(50);
  o.retry_backoff = absl::Milliseconds(100);
  o.redis_timeout = absl::Seconds(2);
  o.handler_threads = 4;
  o.min_replicas_acked = 1;
  o.replica_ack_timeout = absl::Seconds(1);
  return o;
}

TEST(DurableClusterFailoverTest, AMasterKilledMidStreamLosesNoScheduledTimer) {
  RedisCluster::Options co;
  // Short enough for a quick failover, long enough that a loaded machine
  // does not fail over a master that is only slow.
  co.node_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::Start(co);
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;

  // The victim: the master of shard 0. The shards are spread over every
  // master, so the stream reaches the victim and the others.
  std::map<int, int> master_of_shard;
  for (int s = 0; s < kShards; ++s) {
    master_of_shard[s] = cluster.MasterOfSlot(ShardSlot(s)).value();
  }
  const int victim = master_of_shard[0];
  std::set<int> masters;
  for (const auto& [shard, port] : master_of_shard) masters.insert(port);
  ASSERT_EQ(masters.size(), static_cast<size_t>(RedisCluster::kMasters));
  // Redis's clock for the handlers: another master, which stays up.
  int clock_port = 0;
  for (const int port : masters) {
    if (port != victim) clock_port = port;
  }
  RedisClock clock(clock_port);

  // The fleet: one process delivers, another schedules (both in this
  // binary, each a DurableTimer with its own connections).
  auto consumer = DurableTimer::Connect(Options(cluster));
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  auto producer = DurableTimer::Connect(Options(cluster));
  ASSERT_TRUE(producer.ok()) << producer.status();
  std::mutex mu;
  std::vector<Seen> seen;
  std::set<std::string> seen_ids;
  ASSERT_TRUE((*consumer)
                  ->Start([&](const FiredTimer& t) {
                    std::lock_guard<std::mutex> lock(mu);
                    // TIME after the start: an early start shows.
                    absl::StatusOr<int64_t> now = clock.NowMicros();
                    EXPECT_TRUE(now.ok()) << now.status();
                    seen.push_back({t, now.value_or(0)});
                    seen_ids.insert(t.id);
                    return absl::OkStatus();
                  })
                  .ok());

  // The stream: each thread schedules timers due 0.5-1.5 s later on every
  // shard in turn, until told to stop.
  std::atomic<int> phase{0};
  std::atomic<bool> stop{false};
  std::vector<Scheduled> ok;
  std::vector<Scheduled> failed;
  std::vector<absl::Status> errors;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; !stop.load(); ++i) {
        Scheduled s;
        s.id = "p" + std::to_string(p) + "-" + std::to_string(i);
        s.deadline = absl::Now() + absl::Milliseconds(500 + (i * 37) % 1000);
        s.payload = "payload of " + s.id;
        s.shard = internal::ShardOf(s.id, kShards);
        s.phase = phase.load();
        const absl::Status st =
            (*producer)->Schedule(s.id, s.deadline, s.payload);
        std::lock_guard<std::mutex> lock(mu);
        if (st.ok()) {
          ok.push_back(std::move(s));
        } else {
          failed.push_back(std::move(s));
          errors.push_back(st);
        }
        if (!st.ok()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  auto ok_count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return ok.size();
  };

  // Some timers of every master before the kill, some after the promotion,
  // some after the killed node is back as a replica.
  ASSERT_TRUE(WaitUntil([&] { return ok_count() >= 200; }));
  phase = 1;
  ASSERT_TRUE(cluster.KillNode(victim).ok());
  const absl::StatusOr<int> promoted =
      cluster.WaitForPromotion(ShardSlot(0), victim, absl::Seconds(90));
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  phase = 2;
  const size_t at_promotion = ok_count();
  ASSERT_TRUE(WaitUntil([&] { return ok_count() >= at_promotion + 100; }));
  // Until now the promoted master has no replica: its shards' writes fall
  // short of min_replicas_acked. The killed node rejoins as its replica.
  ASSERT_TRUE(cluster.RestartNode(victim, absl::Seconds(90)).ok());
  const size_t at_rejoin = ok_count();
  ASSERT_TRUE(WaitUntil([&] { return ok_count() >= at_rejoin + 100; }));
  stop = true;
  for (std::thread& t : producers) t.join();

  // The stream reached the victim's shards before the kill, and its
  // promoted replica after it (counting only the calls that were OK at
  // once, not those called again).
  std::map<int, int> victim_ok_by_phase;
  for (const Scheduled& s : ok) {
    if (master_of_shard[s.shard] == victim) ++victim_ok_by_phase[s.phase];
  }
  EXPECT_GT(victim_ok_by_phase[0], 0);
  EXPECT_GT(victim_ok_by_phase[2], 0);
  // Every failure said what it was; calling again with the same id (and
  // the same deadline, now past, and payload) schedules it.
  for (const absl::Status& st : errors) {
    EXPECT_TRUE(absl::IsUnavailable(st) || absl::IsDeadlineExceeded(st)) << st;
    // What to do: call again (the client's advice when a round trip
    // failed or the replicas fell short), or retry later (the cluster's
    // CLUSTERDOWN while no master serves the slot: nothing ran).
    EXPECT_TRUE(absl::StrContains(st.message(), "call Schedule() again") ||
                absl::StrContains(st.message(), "retry later"))
        << st;
  }
  for (const Scheduled& s : failed) {
    ASSERT_TRUE(WaitUntil([&] {
      return (*producer)->Schedule(s.id, s.deadline, s.payload).ok();
    })) << s.id;
    ok.push_back(s);
  }

  // Every OK is delivered, with its payload and deadline, never early.
  std::map<std::string, const Scheduled*> expected;
  for (const Scheduled& s : ok) expected[s.id] = &s;
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return seen_ids.size() >= expected.size();
      },
      absl::Seconds(120)))
      << "delivered " << seen_ids.size() << " of " << expected.size();
  ASSERT_TRUE((*consumer)->Stop().ok());
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [id, s] : expected) {
    EXPECT_EQ(seen_ids.count(id), 1u) << id << " was never delivered";
  }
  for (const Seen& d : seen) {
    auto it = expected.find(d.timer.id);
    ASSERT_NE(it, expected.end()) << d.timer.id << " was never scheduled";
    const Scheduled& s = *it->second;
    EXPECT_EQ(d.timer.payload, s.payload) << s.id;
    // Redis keeps deadlines in whole microseconds, rounded up.
    EXPECT_LE(absl::AbsDuration(d.timer.deadline - s.deadline),
              absl::Microseconds(1))
        << s.id;
    EXPECT_GE(absl::FromUnixMicros(d.redis_now_us), d.timer.deadline)
        << s.id << " started before its deadline on Redis's clock";
  }
  std::cout << "OK at once: " << ok.size() - failed.size()
            << ", failed then scheduled again: " << failed.size()
            << ", deliveries: " << seen.size() << " (" << seen_ids.size()
            << " timers); victim's shards by phase: " << victim_ok_by_phase[0]
            << " / " << victim_ok_by_phase[1] << " / " << victim_ok_by_phase[2]
            << "; consumer " << (*consumer)->metrics().ToString() << "\n";
}

}  // namespace
}  // namespace tickwheel::durable
