// durable/testing/redis_cluster.h
// -----------------------------------------------------------------------------
// Test-only. RedisCluster: a Redis Cluster of the test's own, three masters
// and three replicas by default (Options::masters, Options::replicas: one
// master alone, or six without replicas, for the benchmark), each a
// RedisServer (redis_server.h) with cluster-enabled on 127.0.0.1, a free
// port and a folder of its own. It is joined the way `redis-cli --cluster
// create` joins one, step by step, since redis-cli refuses fewer than three
// masters: the slots in equal ranges over the masters, a distinct config
// epoch per node, CLUSTER MEET, then CLUSTER REPLICATE. Start() returns once
// every node reports cluster_state:ok and every replica's link to its
// master is up.
//
//   auto cluster = RedisCluster::Start().value();
//   DurableTimerOptions o;  o.cluster_nodes = cluster->seeds();
//   ...
//   cluster->MoveSlot(slot, other_master_port);  // clients now get MOVED
//
// Every node is stopped by the pid this process started (SIGTERM and
// waitpid) when the object goes; nothing is stopped by name.
//
// This class is thread-compatible.

#ifndef TICKWHEEL_DURABLE_TESTING_REDIS_CLUSTER_H_
#define TICKWHEEL_DURABLE_TESTING_REDIS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/testing/redis_server.h"

namespace tickwheel::durable::testing {

class RedisCluster {
 public:
  // The defaults of Options.
  static constexpr int kMasters = 3;
  static constexpr int kNodes = 6;  // one replica per master

  struct Options {
    // Masters, in [1, 64]; the slots are split in equal ranges over them.
    int masters = kMasters;
    // Replicas of each master, in [0, 4].
    int replicas = kNodes / kMasters - 1;
    // More "--name value" arguments for every redis-server, e.g.
    // {"--appendfsync", "everysec"}.
    std::vector<std::string> extra_args;
    // How long Start() waits for each server's PING and for the whole
    // cluster's cluster_state:ok.
    absl::Duration ready_timeout = absl::Seconds(60);
    // cluster-node-timeout: how long a master may be unreachable before
    // its replica is promoted (a failover takes about twice this). Short
    // for failover tests; long enough that a loaded machine does not fail
    // over a master that is only slow.
    absl::Duration node_timeout = absl::Seconds(5);
  };

  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start() {
    return Start(Options());
  }

  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // The nodes, in the order they were started (the first masters() were
  // created as masters; node masters() + i replicates master i % masters()).
  const std::vector<std::unique_ptr<RedisServer>>& nodes() const {
    return nodes_;
  }
  // The masters it was created with.
  int masters() const { return masters_; }
  // "127.0.0.1:<port>" of every node: seed nodes for a client.
  std::vector<std::string> seeds() const;

  // The port of the master that owns `slot` now (CLUSTER SLOTS as the first
  // reachable node answers it).
  absl::StatusOr<int> MasterOfSlot(int slot);
  // The ports of the masters now.
  absl::StatusOr<std::vector<int>> MasterPorts();

  // Moves `slot` with its keys from its current master to the master on
  // `to_port`, the way redis-cli --cluster reshard does: SETSLOT IMPORTING
  // and MIGRATING, MIGRATE of the keys in batches, then SETSLOT NODE on
  // every master. A client that used the old owner then gets MOVED.
  // Starts once every node agrees on every config epoch (WaitEpochsAgree())
  // and returns once every node, replicas included, names the new owner: a
  // node still holding the old view when the old owner later raises its
  // config epoch (by importing another slot) would tell the new owner, in an
  // UPDATE message, that the old owner has the slot, and the new owner
  // would give it up, leaving the two masters redirecting to each other
  // (seen with Redis 7.0 when slots move back to back).
  absl::Status MoveSlot(int slot, int to_port);

  // Waits until every running node's CLUSTER SLOTS names the master on
  // `port` the owner of `slot`; DeadlineExceeded after `timeout`.
  absl::Status WaitSlotOwner(int slot, int port, absl::Duration timeout);
  // Waits until every running node's CLUSTER NODES gives each node the same
  // config epoch, and no two masters share one; DeadlineExceeded after
  // `timeout`. MoveSlot() starts with it: a new owner raises its config
  // epoch above the highest it knows of, and one that has not heard yet of
  // the old owner's latest raise stays below it, so that the old owner,
  // still claiming the slot for a moment, tells it to give the slot up.
  absl::Status WaitEpochsAgree(absl::Duration timeout);

  // SIGKILL of the node on `port` (the process this object started), and
  // waitpid: a crash. Its replica is promoted once the other masters agree
  // it failed (Options::node_timeout and an election).
  absl::Status KillNode(int port);
  // Waits until every running node names one master other than the one on
  // `old_port` the owner of `slot`, and that node says it is a master
  // (ROLE); returns its port. DeadlineExceeded after `timeout`.
  absl::StatusOr<int> WaitForPromotion(int slot, int old_port,
                                       absl::Duration timeout);
  // Starts the node on `port` again on its port and folder (after
  // KillNode()), and waits until it is a replica whose link to its master
  // is up and every node reports cluster_state:ok: a master that failed
  // over rejoins as a replica of the one promoted in its place.
  absl::Status RestartNode(int port, absl::Duration timeout);

  // One command on the node with `port`.
  absl::StatusOr<internal::RedisReply> Command(
      int port, std::vector<std::string> args,
      absl::Duration timeout = absl::Seconds(5));

 private:
  RedisCluster() = default;
  absl::Status Create(const Options& options);
  // Each master's slots and config epoch, CLUSTER MEET to the first node,
  // and each replica's CLUSTER REPLICATE, before `deadline` (MonotonicNanos).
  absl::Status Join(int64_t deadline);
  absl::Status WaitOk(absl::Duration timeout);
  RedisServer* Node(int port);
  // The owner of `slot` in the CLUSTER SLOTS of the node on `port`.
  absl::StatusOr<int> OwnerIn(int port, int slot);
  absl::StatusOr<std::string> NodeId(int port);

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  int masters_ = kMasters;
  int replicas_ = kNodes / kMasters - 1;
};

}  // namespace tickwheel::durable::testing

#endif  // TICKWHEEL_DURABLE_TESTING_REDIS_CLUSTER_H_
