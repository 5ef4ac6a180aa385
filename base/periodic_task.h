// base/periodic_task.h
// -----------------------------------------------------------------------------
// Internal. PeriodicTask: the task of a periodic timeout, a box shared by
// reference between the timeout's slot and each run in progress, holding
// the period, the missed-run policy (base/missed_runs.h) and the callable (an
// ordinary TaskSlot, filled by the same emplacer as a one-shot task's). A run
// takes its own reference (PeriodicRun), so that a cancel() or a takeTask()
// during the run cannot destroy the callable under it; the last reference
// destroys it.
//
// The timeout's own slot holds the box through PeriodicTask::Install(),
// whose table forwards: invoking runs the callable, destroying drops the
// slot's reference, and taking (stop() then takeTask()) hands out a
// TimerTask that keeps a reference, since a run on an executor may still
// hold one.
//
// Thread-safety: the reference count is atomic (acq_rel drops: the thread
// that destroys the callable sees every run's writes); the callable is
// touched by runs that the timeout's state machine keeps from overlapping.

#ifndef TICKWHEEL_BASE_PERIODIC_TASK_H_
#define TICKWHEEL_BASE_PERIODIC_TASK_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "tickwheel/base/missed_runs.h"
#include "tickwheel/base/task_slot.h"

namespace tickwheel::internal {

class PeriodicTask {
 public:
  // A box with one reference, for a slot. `period_nanos` > 0.
  PeriodicTask(int64_t period_nanos, MissedRuns missed_runs)
      : missed_runs_(missed_runs), period_nanos_(period_nanos) {}
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  int64_t period_nanos() const { return period_nanos_; }
  MissedRuns missed_runs() const { return missed_runs_; }
  // The callable, for the emplacer and for runs.
  TaskSlot& task() { return task_; }

  PeriodicTask* Ref() {
    refs_.fetch_add(1, std::memory_order_relaxed);
    return this;
  }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Puts `box` (and its reference) in the empty `slot`.
  static void Install(TaskSlot& slot, PeriodicTask* box);
  // The box in `slot`, if Install() put one there; nullptr otherwise.
  static PeriodicTask* Of(TaskSlot& slot);

 private:
  ~PeriodicTask() = default;

  std::atomic<int32_t> refs_{1};
  const MissedRuns missed_runs_;
  const int64_t period_nanos_;
  TaskSlot task_;
};

// A run's own reference to a periodic task: move-only; dropping it may
// destroy the callable, if the slot let go of it meanwhile.
class PeriodicRun {
 public:
  explicit PeriodicRun(PeriodicTask* box) : box_(box->Ref()) {}
  PeriodicRun(PeriodicRun&& other) noexcept
      : box_(std::exchange(other.box_, nullptr)) {}
  PeriodicRun& operator=(PeriodicRun&&) = delete;
  ~PeriodicRun() {
    if (box_ != nullptr) box_->Unref();
  }
  TaskSlot& task() { return box_->task(); }

 private:
  PeriodicTask* box_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_PERIODIC_TASK_H_
