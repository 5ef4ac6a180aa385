// The LocalTimer's way to schedule the sleeps of timer/coro.h: here, in
// //timer:local_timer, so that //timer does not depend on it.

#include <utility>

#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/internal/library_timeouts.h"
#include "tickwheel/timer/local_timer.h"

namespace tickwheel::internal {

namespace {

absl::StatusOr<Timeout> ScheduleOnLocalTimer(void* timer, SleepTask& task,
                                             DeadlineSpec when) {
  return LibraryTimeouts::Schedule(*static_cast<LocalTimer*>(timer),
                                   std::move(task), when);
}

}  // namespace

SleepTarget SleepTargetOf(LocalTimer& timer) {
  return {.timer = &timer,
          .schedule = &ScheduleOnLocalTimer,
          .expedite = &ExpediteByReset};
}

}  // namespace tickwheel::internal
