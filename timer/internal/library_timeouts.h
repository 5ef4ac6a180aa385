// timer/internal/library_timeouts.h
// -----------------------------------------------------------------------------
// Internal, for tickwheel's own components that run on a Timer (or a
// LocalTimer) the application owns: timeouts that belong to the component,
// not to the application. The idle tracker (IdleTracker with
// IdleTrackerOptions::timer) and the sleeps of timer/coro.h and timer/asio.h
// schedule through it.
//
// A library timeout is an ordinary timeout in every way but two: the
// application's cancelAll() passes it by (the component keeps working), and
// the application's stop() does not return it (its task is destroyed unrun,
// before stop() returns; the component's own handle then reads
// isCancelled()). So a component learns of stop() and of ~Timer from its
// task's destructor: a sleep ends there with an error. It counts in
// pendingTimeouts() and against max_pending_timeouts like any other.
//
// Not for applications: a library timeout that nothing cancels keeps a
// periodic task alive through every cancelAll().

#ifndef TICKWHEEL_TIMER_INTERNAL_LIBRARY_TIMEOUTS_H_
#define TICKWHEEL_TIMER_INTERNAL_LIBRARY_TIMEOUTS_H_

#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {

class LibraryTimeouts {
 public:
  // Timer::newTimeout(task, delay) for a library timeout: the same task
  // shapes, errors and cost.
  // `TimerT` is Timer or LocalTimer (each makes this class a friend).
  template <typename TimerT, TimerTaskCallable F>
  static absl::StatusOr<Timeout> NewTimeout(TimerT& timer, F&& task,
                                            absl::Duration delay) {
    return Schedule(timer, std::forward<F>(task),
                    DeadlineSpec{.nanos = DelayNanos(delay)});
  }

  // A library timeout due as `when` says: a delay, or with `absolute` a
  // reading of the timer's clock (as Timer::newTimeoutAt()). Errors and cost
  // as Timer::newTimeout(). When it fails, `task` was not moved from.
  template <typename TimerT, TimerTaskCallable F>
  static absl::StatusOr<Timeout> Schedule(TimerT& timer, F&& task,
                                          DeadlineSpec when) {
    when.library = true;
    return timer.ScheduleTask(std::forward<F>(task), when);
  }

  // A LocalTimer's sleep whose stop was requested on its owner thread, its
  // timeout reset to now: the loop's next pollTimeoutMs() is 0 and its next
  // advance() runs it (LocalTimer::ExpediteSleep()). Owner thread only.
  template <typename TimerT>
  static void Expedite(TimerT& timer, const Timeout& timeout) {
    timer.ExpediteSleep(timeout);
  }
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_LIBRARY_TIMEOUTS_H_
