// timer/internal/schedule.h
// -----------------------------------------------------------------------------
// Internal to the facade: how the arguments of newTimeout(), newTimeoutAt()
// and newPeriodic() become a callable and a DeadlineSpec for an engine, the
// same for every timer type (Timer, LocalTimer), so that both take the same
// tasks and refuse the same arguments with the same errors. Included by the
// public headers that declare those calls; users never name anything here.

#ifndef TICKWHEEL_TIMER_INTERNAL_SCHEDULE_H_
#define TICKWHEEL_TIMER_INTERNAL_SCHEDULE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/missed_runs.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/task.h"
#include "tickwheel/timer/timeout.h"

namespace tickwheel::internal {

// InvalidArgument: the task is empty (a null function pointer, an empty
// std::function or TimerTask).
absl::Status EmptyTaskError();
// InvalidArgument: newPeriodic()'s period is <= 0 or infinite.
absl::Status PeriodError(absl::Duration period);
// InvalidArgument: `what` of `call` is a floating-point NaN.
absl::Status NanError(const char* call, const char* what);

// Hands `task` to `schedule(emplace, callable, when)`, the timer's own
// call into its engine: a function goes by its pointer; an empty callable
// is refused (EmptyTaskError()) before the engine sees it.
template <typename F, typename Schedule>
absl::StatusOr<Timeout> ScheduleCallable(F&& task, const DeadlineSpec& when,
                                         Schedule&& schedule) {
  if constexpr (std::is_function_v<std::remove_reference_t<F>>) {
    return ScheduleCallable(&task, when, schedule);
  } else {
    if (IsEmptyCallable<std::decay_t<F>>(task)) return EmptyTaskError();
    // EmplaceTask<F&&> casts the pointer back to F's own constness.
    return schedule(&EmplaceTask<F&&>,
                    const_cast<void*>(static_cast<const void*>(&task)), when);
  }
}

// newTimeoutAt()'s deadline (a point on the timer's clock) as a
// DeadlineSpec.
inline DeadlineSpec AbsoluteSpec(TimePoint deadline) {
  return {.nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       deadline.time_since_epoch())
                       .count(),
          .absolute = true};
}

// newPeriodic()'s initial delay, period and missed-run policy as a
// DeadlineSpec: each duration converted as a delay is (base/nanos.h), a
// period below 1 ns rounded up to 1 ns. InvalidArgument for a NaN count
// (NanError()) or a period <= 0 or infinite (PeriodError()).
template <TimerDuration D1, TimerDuration D2>
absl::StatusOr<DeadlineSpec> PeriodicSpec(
    const D1& initial_delay, const D2& period,
    MissedRuns missed_runs = MissedRuns::kSkip) {
  const std::optional<absl::Duration> initial = AsDuration(initial_delay);
  const std::optional<absl::Duration> every = AsDuration(period);
  if (!initial.has_value()) return NanError("newPeriodic", "initial delay");
  if (!every.has_value()) return NanError("newPeriodic", "period");
  if (*every <= absl::ZeroDuration() || *every == absl::InfiniteDuration()) {
    return PeriodError(*every);
  }
  return DeadlineSpec{.nanos = DelayNanos(*initial),
                      .period_nanos = std::max<int64_t>(1, DelayNanos(*every)),
                      .missed_runs = missed_runs};
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_SCHEDULE_H_
