// durable/timer_impl.h
// -----------------------------------------------------------------------------
// Internal. What DurableTimer's calls share (DurableTimer::Impl): the
// options, the shard keys, the connection pool, the counters and the
// delivery; and the checks and conversions of their arguments. The calls
// live in durable_timer.cc (connect, schedule, cancel, start, stop) and
// inspect.cc (Get() and the dead-letter calls).

#ifndef TICKWHEEL_DURABLE_TIMER_IMPL_H_
#define TICKWHEEL_DURABLE_TIMER_IMPL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/durable/counters.h"
#include "tickwheel/durable/delivery.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/inspect_ops.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_session.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable {
namespace internal {

// arguments.cc.
inline constexpr int kDefaultHandlerThreads = 8;  // handler_threads = 0
// InvalidArgument naming the first bad option.
absl::Status CheckOptions(const DurableTimerOptions& o);
// InvalidArgument unless `id` is 1 to 512 bytes.
absl::Status CheckId(std::string_view id);
// CheckId(), and a payload of at most 512 KiB, and options in range.
absl::Status CheckEntry(std::string_view id, std::string_view payload,
                        const TimerOptions& options);
// A delay in microseconds, rounded up, clamped to [0, kMaxDeadlineMicros].
int64_t DelayMicros(absl::Duration d);
// "<host>:<pid>:<random>".
std::string DefaultOwner();
// Microseconds since the Unix epoch, rounded up (never early), clamped to
// [0, kMaxDeadlineMicros].
int64_t DeadlineMicros(absl::Time t);
// An Unavailable status with what the caller should do about it; any other
// status as it is.
absl::Status WithAdvice(absl::Status s, std::string_view advice);

}  // namespace internal

struct DurableTimer::Impl {
  explicit Impl(DurableTimerOptions o) : options(std::move(o)) {}

  // One round trip on a pooled session, within redis_timeout. With `ack`
  // (a call that writes) and min_replicas_acked > 0, followed by WAIT on
  // each node written to, within replica_ack_timeout more (Replicated()).
  absl::Status Call(std::span<const internal::RedisCommand> commands,
                    std::vector<internal::RedisReply>* replies,
                    internal::ReplicaAck* ack = nullptr) {
    const int64_t deadline = RealClock::MonotonicNanos() + timeout_nanos;
    absl::StatusOr<internal::SessionPool::Lease> session =
        pool.Acquire(deadline);
    if (!session.ok()) return session.status();
    return (*session)->Run(commands, replies, deadline, ack);
  }
  // OK when `ack` counted min_replicas_acked replicas (or none were asked
  // for); otherwise Unavailable saying that `what` is applied on the
  // master but may not survive a failover, and `advice`.
  absl::Status Replicated(const internal::ReplicaAck& ack,
                          std::string_view what, std::string_view advice);
  // INCRBY of 0 on shard `shard`'s version counter: a write that changes
  // nothing, so that the WAIT after it covers every write the shard's
  // master had applied, on any connection (a call repeated after a
  // shortfall, which now finds nothing to change). Its reply is not read.
  internal::RedisCommand Barrier(int shard) const {
    return {"INCRBY", keys[static_cast<size_t>(shard)].seq, "0"};
  }
  absl::Status ErrorReply(const internal::RedisReply& reply,
                          std::string_view what) {
    counters.redis.errors.fetch_add(1, std::memory_order_relaxed);
    if (reply.IsErrorCode("OOM")) {
      counters.Oom(session_options.endpoint.ToString());
    }
    return internal::ReplyErrorStatus(reply, what, session_options.endpoint);
  }
  // A write that may grow memory was accepted: Redis is not full.
  void Accepted() { counters.Room(session_options.endpoint.ToString()); }
  std::shared_ptr<internal::Delivery> delivery_snapshot() {
    internal::MutexLock lock(&mu);
    return delivery;
  }

  // inspect.cc: retry or purge one dead letter (true: it was one), or all
  // that `op` selects, shard by shard in batches (how many). `what` names
  // the call in errors.
  absl::StatusOr<bool> DeadOne(std::string_view id, internal::DeadOp op,
                               std::string_view what);
  absl::StatusOr<int64_t> DeadAll(internal::DeadOp op, std::string_view what);

  const DurableTimerOptions options;
  internal::SessionOptions session_options;
  int64_t timeout_nanos = 0;
  std::vector<internal::ShardKeys> keys;
  internal::Counters counters;
  // Holds pointers to the two members above, filled in by Connect()
  // before its first use.
  internal::SessionPool pool{&session_options, &counters.redis};
  // HintChannel() of the keyspace, and how soon a timer must be due for
  // Schedule*() to announce it (poll_interval; 0: schedule_hints off).
  std::string hint_channel;
  int64_t hint_window_us = 0;
  internal::ScheduleHint Hint(int shard) const {
    return {shard, hint_window_us, hint_channel};
  }

  internal::Mutex mu;
  enum class State { kIdle, kStarted, kStopped };
  State state ABSL_GUARDED_BY(mu) = State::kIdle;
  std::shared_ptr<internal::Delivery> delivery ABSL_GUARDED_BY(mu);
};

}  // namespace tickwheel::durable

#endif  // TICKWHEEL_DURABLE_TIMER_IMPL_H_
