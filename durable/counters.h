// durable/counters.h
// -----------------------------------------------------------------------------
// Internal. The counters behind DurableTimer::metrics(), shared by the API
// calls, the sessions and the delivery threads.
//
// Each counter is a std::atomic written with relaxed read-modify-writes and
// read with relaxed loads: they order nothing, and a snapshot is a set of
// individually exact values. redis_full is a flag whose exchange decides
// which thread logs a change of state, once. The lateness histogram is
// thread-compatible, so it sits under its own mutex (one lock per delivery,
// held for a few additions).

#ifndef TICKWHEEL_DURABLE_COUNTERS_H_
#define TICKWHEEL_DURABLE_COUNTERS_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_session.h"
#include "tickwheel/timer/log.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel::durable::internal {

struct Counters {
  RedisCounters redis;
  std::atomic<int64_t> scheduled{0};
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> acknowledged{0};
  std::atomic<int64_t> redelivered{0};
  std::atomic<int64_t> handler_failures{0};
  std::atomic<int64_t> start_window_misses{0};
  std::atomic<int64_t> dead_lettered{0};
  std::atomic<int64_t> redis_oom{0};           // OOM replies
  std::atomic<int64_t> replica_shortfalls{0};  // delivery round trips
  std::atomic<bool> redis_full{false};         // the last write said so

  void Add(std::atomic<int64_t>& counter, int64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  // Redis at `endpoint` answered OOM: counted; logged when it was not
  // known to be full.
  void Oom(std::string_view endpoint) {
    redis_oom.fetch_add(1, std::memory_order_relaxed);
    if (redis_full.exchange(true, std::memory_order_relaxed)) return;
    Log(LogSeverity::kWarning,
        fmt::format("durable timers: Redis at {} is full (maxmemory, "
                    "noeviction): new schedules are refused with "
                    "ResourceExhausted; delivery, acknowledgement and "
                    "cancel go on and free memory",
                    endpoint));
  }
  // Redis at `endpoint` accepted a write that may grow memory: logged when
  // it was known to be full.
  void Room(std::string_view endpoint) {
    if (!redis_full.load(std::memory_order_relaxed) ||
        !redis_full.exchange(false, std::memory_order_relaxed)) {
      return;
    }
    Log(LogSeverity::kInfo,
        fmt::format("durable timers: Redis at {} accepts new schedules again",
                    endpoint));
  }
  void RecordLateness(absl::Duration lateness) ABSL_LOCKS_EXCLUDED(mu) {
    MutexLock lock(&mu);
    lateness_histogram.Record(lateness);
  }
  LatenessHistogram Lateness() const ABSL_LOCKS_EXCLUDED(mu) {
    MutexLock lock(&mu);
    return lateness_histogram;
  }

  mutable Mutex mu;
  LatenessHistogram lateness_histogram ABSL_GUARDED_BY(mu);
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_COUNTERS_H_
