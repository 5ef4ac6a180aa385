// worker/timer_counters.h
// -----------------------------------------------------------------------------
// Internal. The counters a timer keeps of its own work, for
// Timer::metrics(): runs, cancelAll()'s cancellations, ticks, catch-up ticks,
// wake-ups, and the lateness histogram. The facade reads them straight into
// the public TimerMetrics (timer/internal/engine_bridge.h, MetricsFrom()),
// with no snapshot type of the engine's own in between.
//
// Thread-safety: one writer at a time, the thread that drives the wheel (a
// Timer's worker, then the thread that stops it after joining the worker; a
// LocalTimer's owner), so each counter is a load and a store, no
// read-modify-write; any thread reads, relaxed. A snapshot taken while the
// wheel turns is a set of individually exact values that may be a few
// events apart: the runs and their lateness are published in groups of up
// to HistogramCounts::kGroupCap, and completely at the end of each pass.

#ifndef TICKWHEEL_WORKER_TIMER_COUNTERS_H_
#define TICKWHEEL_WORKER_TIMER_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "tickwheel/base/histogram.h"

namespace tickwheel::internal {

struct TimerCounters {
  std::atomic<int64_t> cancelled_by_all{0};  // what cancelAll() cancelled
  std::atomic<int64_t> ticks{0};             // the first tick not processed
  // Ticks processed a full tick or more after their end.
  std::atomic<int64_t> catch_up_ticks{0};
  std::atomic<int64_t> wakeups{0};  // returns from sleep
  // Run start - deadline, in nanoseconds, one value per run (periodic ones
  // each); its count is the runs started. Recorded in groups
  // (HistogramCounts): the driving thread calls Publish() when a pass ends.
  HistogramCounts lateness;

  static void Bump(std::atomic<int64_t>& counter, int64_t by = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + by,
                  std::memory_order_relaxed);
  }
  [[gnu::always_inline]] void NoteRun(int64_t lateness_nanos) {
    lateness.Record(lateness_nanos);
  }
  // Makes every run noted so far visible to readers.
  void Publish() { lateness.Publish(); }
  // Runs started and published.
  int64_t expired() const {
    return lateness.count.load(std::memory_order_relaxed);
  }
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_TIMER_COUNTERS_H_
