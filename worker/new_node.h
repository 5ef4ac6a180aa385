// worker/new_node.h
// -----------------------------------------------------------------------------
// Internal. What every engine does to accept a new timeout, before it hands
// the node on: reserve a pending slot, work out the deadline, build the node
// with its task. A Timer's worker (worker_schedule.cc) then publishes the
// node on its thread's shard; a LocalTimer's engine (local_engine.h) files
// it into its wheel itself. Both count pending slots in the same
// SharedTimerState words (shared_state.h, "Counting").
//
// Thread-safety: each function touches only the count word it is given
// (atomically) and the node it builds.

#ifndef TICKWHEEL_WORKER_NEW_NODE_H_
#define TICKWHEEL_WORKER_NEW_NODE_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel::internal {

// FailedPrecondition for `call` on a stopped timer.
absl::Status StoppedError(std::string_view call);

// Reserves one pending slot in `count` (a SharedTimerState count word),
// checking its closed bit and, with `max` > 0, the limit in the same RMW: a
// CAS loop with a limit, so that the count never exceeds it, not even for an
// instant; one atomic add without. FailedPrecondition when the word is
// closed, ResourceExhausted (naming both numbers) at the limit; the slot is
// not held then.
absl::Status ReserveSlot(std::atomic<int64_t>& count, int64_t max);

// The clock reading a timeout is due at, saturating: `when` counted from
// `now`, or from `start` (the timer's startTime) when the caller read the
// clock before the timer started. An absolute deadline in the past is taken
// as `now`: it runs promptly, and deadline() and the lateness it records
// measure from the call, not from a time before it.
int64_t DeadlineFor(int64_t now, int64_t start, const DeadlineSpec& when);

// A node due at `deadline`, with its task (`emplace` moves it from
// `callable`; a periodic one goes into a box of its own, with the period and
// the missed-run policy of `when`), kQueued with two references: the handle's
// and the engine's. On failure, ResourceExhausted with the slot in `count`
// given back; if moving the callable throws, the slot is given back and the
// exception propagates.
absl::StatusOr<TimeoutNode*> NewNode(TaskEmplacer emplace, void* callable,
                                     int64_t deadline, const DeadlineSpec& when,
                                     std::atomic<int64_t>& count);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_NEW_NODE_H_
