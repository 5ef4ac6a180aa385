// timer/instance_limit.h
// -----------------------------------------------------------------------------
// A process-wide count of live Timers, as in Netty: every Timer owns a thread
// and a wheel, so an application that creates one per connection or per
// request is almost always wrong. When the count passes the limit (64 by
// default) tickwheel logs, once per process:
//
//   You are creating too many tickwheel Timer instances (65 live, limit 64).
//   Timer is a shared resource that must be reused across the application, so
//   that only a few instances are created.
//
// or, with `fail_create`, Timer::Create() returns ResourceExhausted instead.
// A Timer counts from Create() until its first stop() or its destruction.
//
// These functions are thread-safe.

#ifndef TICKWHEEL_TIMER_INSTANCE_LIMIT_H_
#define TICKWHEEL_TIMER_INSTANCE_LIMIT_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <cstdint>

#include "absl/status/status.h"

namespace tickwheel {

struct InstanceLimit {
  int64_t max_instances = 64;  // <= 0 disables the check
  bool fail_create = false;    // ResourceExhausted instead of a warning
};

// Replaces the process-wide limit; returns the previous one. Applies to
// Create() calls that start afterwards.
InstanceLimit SetInstanceLimit(InstanceLimit limit);

// Timers created and neither stopped nor destroyed.
int64_t LiveTimerCount();

namespace internal {

// Counts a new timer in. ResourceExhausted (and no count) when the limit is
// passed and fail_create is set; otherwise OK, with the one-time warning.
absl::Status AcquireInstanceSlot();
// Counts a timer out.
void ReleaseInstanceSlot();
// Lets the one-time warning fire again. Tests only.
void ResetInstanceWarningForTesting();

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_INSTANCE_LIMIT_H_
