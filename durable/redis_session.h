// durable/redis_session.h
// -----------------------------------------------------------------------------
// Internal. RedisSession: a RedisConnection that reconnects by itself, loads
// durable/'s scripts after every (re)connect, and runs a script again after
// loading it when Redis answers NOSCRIPT (a restarted Redis has an empty
// script cache). SessionPool: the sessions of DurableTimer's API calls.
//
// With cluster seeds (SessionOptions::cluster_seeds), a session speaks to a
// Redis Cluster: it reads the slot map (CLUSTER SLOTS) from a seed, sends
// each command (a MULTI ... EXEC block as one) to the master of its first
// key's slot over a connection per node (every node's pipeline is sent
// before any reply is read, so the nodes work at once and a round costs one
// round trip), and follows MOVED (the map is read again), ASK (ASKING, then
// the command, on the node named) and TRYAGAIN (a slot in the middle of a
// migration: again after a short pause), up to SessionOptions::max_redirects
// times per command (redis_session_cluster.cc).
//
// RedisSession is thread-compatible: one thread at a time (the delivery's
// poller owns one; API calls take one from the pool). SessionPool is
// thread-safe.
//
// Errors: every call takes an absolute deadline (MonotonicNanos()), which
// covers reconnecting, loading scripts and the commands themselves, so that
// a call returns Unavailable within about redis_timeout when Redis is down
// or hangs. RedisCounters counts failed round trips and reconnects.

#ifndef TICKWHEEL_DURABLE_REDIS_SESSION_H_
#define TICKWHEEL_DURABLE_REDIS_SESSION_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_connection.h"

namespace tickwheel::durable::internal {

struct SessionOptions {
  RedisEndpoint endpoint;
  std::string password;
  int64_t timeout_nanos = 1'000'000'000;  // redis_timeout
  std::string username;  // an ACL user; empty: the default user
  // Seed nodes of a Redis Cluster; empty: `endpoint` is one Redis.
  std::vector<RedisEndpoint> cluster_seeds;
  // Redirects (MOVED, ASK, TRYAGAIN) one command may follow in one Run().
  int max_redirects = 5;
  // WAIT <min_replicas_acked> <replica_ack_timeout_ms> after the commands
  // of a Run() that asks for it (a ReplicaAck); 0: no WAIT.
  int min_replicas_acked = 0;
  int64_t replica_ack_timeout_ms = 1000;
};

// What the WAITs of one Run() counted: the fewest replicas that
// acknowledged on any node the commands ran on, and that node.
struct ReplicaAck {
  // In: WAIT's timeout for this Run(); 0: replica_ack_timeout_ms.
  int64_t timeout_ms = 0;
  bool waited = false;  // a WAIT was sent (min_replicas_acked > 0)
  int64_t acked = 0;
  RedisEndpoint node;
  // Takes the count of the WAIT on `at` when it is the lowest yet.
  void Add(int64_t count, const RedisEndpoint& at) {
    if (!waited || count < acked) {
      acked = count;
      node = at;
    }
    waited = true;
  }
  bool short_of(int wanted) const { return waited && acked < wanted; }
};

// WAIT's reply: the replicas that acknowledged; an error reply (WAIT sent
// to a replica, say) counts none.
inline int64_t WaitCount(const RedisReply& reply) {
  return reply.type == RedisReply::Type::kInteger ? reply.AsInt() : 0;
}

// Written by any thread with relaxed atomic adds; read for metrics().
struct RedisCounters {
  std::atomic<int64_t> errors{0};  // failed round trips and error replies
  std::atomic<int64_t> reconnects{
      0};  // connections made again after one failed
};

// The status an error reply stands for, with what to do about it:
// Unavailable (LOADING, READONLY, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN),
// ResourceExhausted (OOM), PermissionDenied (NOAUTH, WRONGPASS, NOPERM),
// FailedPrecondition (WRONGTYPE: the keyspace holds other data; MOVED, ASK,
// CROSSSLOT: a Redis Cluster), Internal otherwise. `what` names the call.
absl::Status ReplyErrorStatus(const RedisReply& reply, std::string_view what,
                              const RedisEndpoint& endpoint);

class RedisSession {
 public:
  RedisSession(const SessionOptions* options, RedisCounters* counters)
      : options_(options), counters_(counters) {}

  // Runs `commands` in one round trip (one more after a reconnect, to load
  // the scripts, and after NOSCRIPT, to load them and run those commands
  // again), all before `deadline_nanos`. OK means every command got a reply
  // in `replies`, error replies included (see ReplyErrorStatus()).
  // Unavailable: Redis unreachable, failed or timed out; the connection is
  // dropped and the commands may or may not have run. PermissionDenied: the
  // password was refused. In a cluster, also Unavailable when a command is
  // still redirected after max_redirects redirects (resharding or failover
  // in progress); the commands may or may not have run.
  // With `ack` and SessionOptions::min_replicas_acked > 0, a WAIT follows
  // the commands on each node's connection (its reply is not in
  // `replies`), `ack` gets the lowest count, and the deadline is extended
  // by the WAIT's timeout (ack->timeout_ms, or replica_ack_timeout_ms). WAIT
  // counts the replicas that have every write this connection made so far, so
  // to cover writes made on other connections (a call repeated after a
  // shortfall that now changes nothing), the caller adds a write that changes
  // nothing, such as INCRBY of 0, to the commands.
  absl::Status Run(std::span<const RedisCommand> commands,
                   std::vector<RedisReply>* replies, int64_t deadline_nanos,
                   ReplicaAck* ack = nullptr);

  // Connects now unless connected (the same errors as Run()).
  absl::Status Connect(int64_t deadline_nanos);

  bool connected() const {
    return cluster() ? !slots_.empty() : conn_ != nullptr && !conn_->broken();
  }
  // Counts an error reply that the caller found among Run()'s replies.
  void CountErrorReply() {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);
  }
  const RedisEndpoint& endpoint() const { return options_->endpoint; }

 private:
  struct Unit;  // redis_session_cluster.cc
  bool cluster() const { return !options_->cluster_seeds.empty(); }
  absl::Status LoadScripts(RedisConnection* conn, int64_t deadline_nanos);
  absl::Status Failed(absl::Status status);
  // Redis Cluster (redis_session_cluster.cc).
  absl::Status RunCluster(std::span<const RedisCommand> commands,
                          std::vector<RedisReply>* replies,
                          int64_t deadline_nanos, ReplicaAck* ack);
  absl::Status RunRound(std::span<const RedisCommand> commands,
                        std::vector<Unit>& units,
                        const std::vector<size_t>& pending,
                        std::vector<RedisReply>* replies,
                        int64_t deadline_nanos, bool wait);
  // Whether Run() should WAIT for `ack`, and the WAIT command.
  bool WantWait(const ReplicaAck* ack) const {
    return ack != nullptr && options_->min_replicas_acked > 0;
  }
  RedisCommand WaitCommand() const;
  // The WAIT's timeout of the Run() in progress (ReplicaAck::timeout_ms).
  int64_t wait_timeout_ms_ = 0;
  absl::StatusOr<RedisConnection*> NodeConnection(const RedisEndpoint& node,
                                                  int64_t deadline_nanos);
  absl::Status RefreshSlots(int64_t deadline_nanos);

  const SessionOptions* options_;
  RedisCounters* counters_;
  std::unique_ptr<RedisConnection> conn_;
  bool ever_failed_ = false;  // a connect after this counts as a reconnect
  // Cluster only: a connection per node ("tcp://host:port"), and the slot
  // map (empty until read, and after a node failed).
  std::map<std::string, std::unique_ptr<RedisConnection>> nodes_;
  SlotMap slots_;
};

// Sessions for API calls: a caller takes one (or a new one, up to
// kMaxSessions), uses it alone, and gives it back.
class SessionPool {
 public:
  static constexpr int kMaxSessions = 8;

  SessionPool(const SessionOptions* options, RedisCounters* counters)
      : options_(options), counters_(counters) {}

  class Lease {
   public:
    Lease(SessionPool* pool, std::unique_ptr<RedisSession> session)
        : pool_(pool), session_(std::move(session)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (session_ != nullptr) pool_->Return(std::move(session_));
    }
    RedisSession* operator->() const { return session_.get(); }

   private:
    SessionPool* pool_;
    std::unique_ptr<RedisSession> session_;
  };

  // A session for the caller alone. Unavailable when all kMaxSessions are
  // in use until `deadline_nanos`.
  absl::StatusOr<Lease> Acquire(int64_t deadline_nanos)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Return(std::unique_ptr<RedisSession> session) ABSL_LOCKS_EXCLUDED(mu_);

  const SessionOptions* options_;
  RedisCounters* counters_;
  Mutex mu_;
  std::condition_variable_any returned_;
  std::vector<std::unique_ptr<RedisSession>> idle_ ABSL_GUARDED_BY(mu_);
  int created_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_REDIS_SESSION_H_
