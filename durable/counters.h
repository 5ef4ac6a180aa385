// durable/counters.h
// -----------------------------------------------------------------------------
// Internal. The counters behind DurableTimer::metrics(), shared by the API
// calls, the sessions and the delivery threads.
//
// Each counter is a std::atomic written with relaxed read-modify-writes and
// read with relaxed loads: they order nothing, and a snapshot is a set of
// individually exact values. The lateness histogram is thread-compatible,
// so it sits under its own mutex (one lock per delivery, held for a few
// additions).

#ifndef TICKWHEEL_DURABLE_COUNTERS_H_
#define TICKWHEEL_DURABLE_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_session.h"
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

  void Add(std::atomic<int64_t>& counter, int64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
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
