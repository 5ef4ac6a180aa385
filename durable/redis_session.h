// durable/redis_session.h
// -----------------------------------------------------------------------------
// Internal. RedisSession: a RedisConnection that reconnects by itself, loads
// durable/'s scripts after every (re)connect, and runs a script again after
// loading it when Redis answers NOSCRIPT (a restarted Redis has an empty
// script cache). SessionPool: the sessions of DurableTimer's API calls.
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
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_connection.h"

namespace tickwheel::durable::internal {

struct SessionOptions {
  RedisEndpoint endpoint;
  std::string password;
  int64_t timeout_nanos = 1'000'000'000;  // redis_timeout
  std::string username;  // an ACL user; empty: the default user
};

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
  // password was refused.
  absl::Status Run(std::span<const RedisCommand> commands,
                   std::vector<RedisReply>* replies, int64_t deadline_nanos);

  // Connects now unless connected (the same errors as Run()).
  absl::Status Connect(int64_t deadline_nanos);

  bool connected() const { return conn_ != nullptr && !conn_->broken(); }
  // Counts an error reply that the caller found among Run()'s replies.
  void CountErrorReply() {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);
  }
  const RedisEndpoint& endpoint() const { return options_->endpoint; }

 private:
  absl::Status LoadScripts(int64_t deadline_nanos);
  absl::Status Failed(absl::Status status);

  const SessionOptions* options_;
  RedisCounters* counters_;
  std::unique_ptr<RedisConnection> conn_;
  bool ever_failed_ = false;  // a connect after this counts as a reconnect
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
