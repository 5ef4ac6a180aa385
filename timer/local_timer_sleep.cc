// The LocalTimer's way to schedule the sleeps of timer/coro.h: here, in
// //timer:local_timer, so that //timer does not depend on it.

#include <utility>

#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/internal/library_timeouts.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel::internal {

namespace {

absl::StatusOr<Timeout> ScheduleOnLocalTimer(void* timer, SleepTask& task,
                                             DeadlineSpec when) {
  return LibraryTimeouts::Schedule(*static_cast<LocalTimer*>(timer),
                                   std::move(task), when);
}

}  // namespace

// The reset to now, from any thread (ExpediteByReset()); on the owner
// thread the engine is told too, so that the loop's next pollTimeoutMs() is
// 0 and its next advance() resumes the sleep, not only at its tick's end.
// Whether this is the owner thread is read off the node before the reset,
// which may take the node's link for the notice queue: a node that holds
// this thread's owner tag and is armed was scheduled by this thread, the
// timer's owner, so the timer is alive (TimeoutNode::OwnedByThisThread()).
// Another thread touches nothing but the node.
void ExpediteOnLocalTimer(void* timer, const Timeout& timeout) {
  const TimeoutNode* node = TimeoutAccess::Node(timeout);
  const bool on_owner = node != nullptr && node->OwnedByThisThread();
  ExpediteByReset(timer, timeout);
  if (on_owner) {
    LibraryTimeouts::Expedite(*static_cast<LocalTimer*>(timer), timeout);
  }
}

SleepTarget SleepTargetOf(LocalTimer& timer) {
  return {.timer = &timer,
          .schedule = &ScheduleOnLocalTimer,
          .expedite = &ExpediteOnLocalTimer};
}

}  // namespace tickwheel::internal
