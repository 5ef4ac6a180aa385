// worker/wake_planner.h
// -----------------------------------------------------------------------------
// Internal. WakePlanner: how the worker sleeps and who wakes it.
//
// Before sleeping until its plan (WheelDriver::PlanWake()), the worker
// stores in `wake_limit_` the latest deadline that would be due before it
// wakes (a clock reading, seq_cst), then checks that its queues are still
// empty (seq_cst); while awake it holds kAwake. A producer publishes its
// node (a seq_cst CAS or exchange), then loads the limit (seq_cst): only if
// its deadline is at or below it does it claim the wake-up with a CAS and
// wake the sleeper. Either the worker sees the node or the producer sees
// the plan (Dekker), so no timeout sleeps through its deadline, and a
// newTimeout() due later than the planned wake-up, a reset() to a later
// deadline, or any cancel() costs the sleeping worker nothing. Backlogs that
// must not wait for a deadline (a full lane, cancelled nodes at their bound,
// the node pool short of memory, a cancelAll() request) claim the wake-up
// whatever the plan (WakeForBacklog()).
//
// The sleeper (the clock's) dies under wake_mu_: producers may still be
// about to wake it after stop() has collected their node, so every wake from
// another thread takes the mutex (rare: only a deadline earlier than the
// plan, or a backlog).
//
// Thread-safety: Sleep() on the worker only; the wakes from any thread.

#ifndef TICKWHEEL_WORKER_WAKE_PLANNER_H_
#define TICKWHEEL_WORKER_WAKE_PLANNER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/clock.h"
#include "tickwheel/base/interleave.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/worker/shared_state.h"

namespace tickwheel::internal {

class WakePlanner final : public BacklogWaker {
 public:
  WakePlanner() = default;
  WakePlanner(const WakePlanner&) = delete;
  WakePlanner& operator=(const WakePlanner&) = delete;

  // Installs the worker's sleeper before its thread starts, or removes it
  // when the thread cannot start; the caller holds the lock that orders
  // this before any wake (a producer wakes only a worker that planned a
  // sleep, and wake_limit_ is kAwake until then), which the analysis cannot
  // see.
  void SetSleeperBeforeStart(std::unique_ptr<Clock::Sleeper> sleeper)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    sleeper_ = std::move(sleeper);
  }
  // Destroys the sleeper once the worker is gone (unregisters it from a
  // ManualClock); a producer's wake after that finds none.
  void DestroySleeper() ABSL_LOCKS_EXCLUDED(wake_mu_) {
    MutexLock lock(&wake_mu_);
    sleeper_.reset();
  }

  // The worker: publishes the plan (`limit`), then, unless `busy()` (new
  // work in its queues, checked after the plan is published) says not to,
  // sleeps until `until()`, also read after the plan is published (so that
  // whoever makes an earlier wake-up due after that read sees the plan and
  // wakes us). True if it slept.
  template <typename Busy, typename Until>
  bool Sleep(int64_t limit, Busy busy, Until until) {
    wake_limit_.store(limit, std::memory_order_seq_cst);
    // Dekker with the producers: work pushed before our store is seen
    // here; work pushed after it sees our plan and wakes us if it must.
    TICKWHEEL_INTERLEAVE_POINT();
    if (busy()) {
      wake_limit_.store(kAwake, std::memory_order_seq_cst);
      return false;
    }
    OwnSleeper().SleepUntil(until());
    wake_limit_.store(kAwake, std::memory_order_seq_cst);
    return true;
  }

  // Wakes the worker if it sleeps past `deadline` (a clock reading). The
  // first producer to need it claims the wake-up: the woken worker drains
  // its queues before it plans again, so later producers need not wake it.
  void WakeIfSleepingPast(int64_t deadline) override
      ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Wakes the worker if it sleeps, whatever it planned.
  void WakeForBacklog() override ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Wakes the worker unconditionally (stop()).
  void Wake() ABSL_LOCKS_EXCLUDED(wake_mu_);

 private:
  static constexpr int64_t kAwake = INT64_MIN;

  // The worker sleeps without wake_mu_, since a Wake() must be able to take
  // it meanwhile. The sleeper cannot die under it: only the worker's own
  // shutdown, or stop() after joining the worker, destroys it.
  Clock::Sleeper& OwnSleeper() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return *sleeper_;
  }

  // Deadlines at or below this must wake the sleeping worker; kAwake while
  // it runs or once a producer has claimed the wake-up; INT64_MAX while it
  // sleeps with nothing due.
  alignas(64) std::atomic<int64_t> wake_limit_{kAwake};
  Mutex wake_mu_;
  std::unique_ptr<Clock::Sleeper> sleeper_ ABSL_GUARDED_BY(wake_mu_);
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WAKE_PLANNER_H_
