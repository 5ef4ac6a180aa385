// stop() and cancelAll(): the worker's life cycle around them; what they do
// to the nodes the worker holds is worker/sweeper.h's.

#include <vector>

#include "tickwheel/worker/worker.h"

namespace tickwheel::internal {

absl::StatusOr<Worker::StoppedNodes> Worker::Stop() {
  if (OnWorkerThread()) {
    return absl::FailedPreconditionError(
        "stop: called from the timer's own worker thread (inside a task, or a "
        "task_executor that runs tasks inline); call stop() from another "
        "thread");
  }
  StoppedNodes unprocessed;
  StoppedNodes library;
  {
    MutexLock lock(&stop_mu_);
    if (!shared_.Close()) return StoppedNodes();  // already stopped
    // After this, no thread can start: StartThread() checks the closed bit
    // under start_mu_.
    bool started;
    {
      MutexLock start_lock(&start_mu_);
      started = started_.load(std::memory_order_relaxed);
    }
    if (started) {
      shutdown_.store(true, std::memory_order_release);
      planner_.Wake();
      thread_.join();
    }
    // What the worker left: nothing more is pending.
    cancel_all_.Serve([this] { return AnswerCancelAll(); });
    unprocessed = sweeper_.Collect();
    library = Sweeper::TakeLibrary(unprocessed);
    planner_.DestroySleeper();  // unregisters from a ManualClock
  }
  // Their tasks are destroyed here, unrun, and outside the lock: a sleep's
  // task ends the sleep in its destructor, which resumes the sleeping
  // coroutine on this thread, and that coroutine may call the timer again.
  for (const Stopped& s : library) Sweeper::Discard(s.node);
  return unprocessed;
}

void Worker::Shutdown() {
  // From now on Timeout::timer() answers nullptr.
  shared_.owner.store(nullptr, std::memory_order_release);
  if (!OnWorkerThread()) {
    absl::StatusOr<StoppedNodes> unprocessed = Stop();
    if (unprocessed.ok()) {
      for (const Stopped& s : *unprocessed) Sweeper::Discard(s.node);
    }
    return;
  }
  // Destroyed from inside one of our own tasks: we cannot join ourselves.
  MutexLock lock(&stop_mu_);
  if (!shared_.Close()) return;
  finish_on_thread_ = true;
  shutdown_.store(true, std::memory_order_release);
  thread_.detach();
}

int64_t Worker::CancelAll() {
  if (OnWorkerThread()) return sweeper_.CancelAll();
  if (!started_.load(std::memory_order_acquire)) return 0;  // none pending
  return cancel_all_.Request([this] { return shared_.closed(); },
                             [this] { planner_.WakeForBacklog(); });
}

int64_t Worker::AnswerCancelAll() {
  // After stop() has joined the worker nothing is pending.
  if (shutdown_.load(std::memory_order_acquire) && !OnWorkerThread()) {
    return 0;
  }
  const int64_t cancelled = sweeper_.CancelAll();
  sweeper_.PurgeCancelled();
  return cancelled;
}

}  // namespace tickwheel::internal
