// base/deadline_spec.h
// -----------------------------------------------------------------------------
// Internal. How the facade tells the engine when a new timeout is due, and
// whether it repeats: the one place where a timeout is said to be periodic.

#ifndef TICKWHEEL_BASE_DEADLINE_SPEC_H_
#define TICKWHEEL_BASE_DEADLINE_SPEC_H_

#include <cstdint>

#include "tickwheel/base/missed_runs.h"

namespace tickwheel::internal {

// Passed by const reference on newTimeout()'s path: at three words a copy
// by value goes through memory at every call, which showed in the cost of
// newTimeout() itself.
struct DeadlineSpec {
  int64_t nanos = 0;  // a delay (>= 0), or with `absolute` a clock reading
  // > 0: a periodic timeout, due every period_nanos after its first run;
  // 0: one-shot.
  int64_t period_nanos = 0;
  bool absolute = false;
  // What a periodic timeout does about runs it missed (base/missed_runs.h);
  // ignored when one-shot. The engine keeps it in the timeout's task box.
  MissedRuns missed_runs = MissedRuns::kSkip;
  // Scheduled by one of tickwheel's own components on the application's
  // timer (TimeoutNode::kLibrary): cancelAll() passes it by, stop() does not
  // return it.
  bool library = false;

  bool periodic() const { return period_nanos > 0; }
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_DEADLINE_SPEC_H_
