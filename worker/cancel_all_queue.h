// worker/cancel_all_queue.h
// -----------------------------------------------------------------------------
// Internal. CancelAllQueue: cancelAll() calls from other threads, handed to
// the worker and answered in order. Only the worker may cancel what sits in
// its wheel, so another thread files a ticket, wakes the worker and waits;
// the worker serves every waiting ticket in turn at the start of a pass (a
// later ticket finds what was scheduled since the earlier one) and hands
// each caller its count.
//
// Thread-safety: Request() from any thread but the worker; Serve() on the
// worker (or on stop()'s thread once the worker has been joined). mu_
// guards the tickets and results; `waiting_` lets a pass skip the mutex when
// no ticket waits (release by Request(), acquire by Serve(); seq_cst where
// the worker's Sleep() reads it, after publishing its plan).

#ifndef TICKWHEEL_WORKER_CANCEL_ALL_QUEUE_H_
#define TICKWHEEL_WORKER_CANCEL_ALL_QUEUE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {

class CancelAllQueue {
 public:
  CancelAllQueue() = default;
  CancelAllQueue(const CancelAllQueue&) = delete;
  CancelAllQueue& operator=(const CancelAllQueue&) = delete;

  // Files a ticket unless `closed()` (checked under the mutex, so that a
  // stop() that closes the timer and then serves the queue sees every
  // ticket filed before), calls `wake()`, and waits for the worker's answer:
  // how many it cancelled. 0 when closed.
  int64_t Request(const std::function<bool()>& closed,
                  const std::function<void()>& wake) ABSL_LOCKS_EXCLUDED(mu_);

  // A ticket waits (Sleep()'s check, seq_cst).
  bool waiting() const { return waiting_.load(std::memory_order_seq_cst); }

  // Serves every waiting ticket with `cancel_all()`, which returns the count
  // for one ticket; not under the mutex, since cancelling destroys tasks,
  // which is user code.
  template <typename F>
  void Serve(F&& cancel_all) ABSL_LOCKS_EXCLUDED(mu_) {
    if (!waiting_.load(std::memory_order_acquire)) return;
    int64_t first, last;
    {
      MutexLock lock(&mu_);
      first = served_ + 1;
      last = requested_;
      waiting_.store(false, std::memory_order_relaxed);
    }
    std::vector<std::pair<int64_t, int64_t>> results;
    for (int64_t ticket = first; ticket <= last; ++ticket) {
      results.emplace_back(ticket, cancel_all());
    }
    Answer(results, last);
  }

 private:
  void Answer(const std::vector<std::pair<int64_t, int64_t>>& results,
              int64_t last) ABSL_LOCKS_EXCLUDED(mu_);

  Mutex mu_;
  std::condition_variable_any cv_;
  int64_t requested_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t served_ ABSL_GUARDED_BY(mu_) = 0;
  // The count each served ticket cancelled, until its caller takes it.
  std::vector<std::pair<int64_t, int64_t>> results_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> waiting_{false};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_CANCEL_ALL_QUEUE_H_
