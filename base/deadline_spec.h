// base/deadline_spec.h
// -----------------------------------------------------------------------------
// Internal. How the facade tells the worker when a new timeout is due.

#ifndef TICKWHEEL_BASE_DEADLINE_SPEC_H_
#define TICKWHEEL_BASE_DEADLINE_SPEC_H_

#include <cstdint>

namespace tickwheel::internal {

struct DeadlineSpec {
  int64_t nanos = 0;  // a delay (>= 0), or with `absolute` a clock reading
  bool absolute = false;
  bool periodic = false;  // the task's table has the period (TaskOps)
  // Scheduled by one of tickwheel's own components on the application's
  // timer (TimeoutNode::kLibrary): cancelAll() passes it by, stop() does not
  // return it.
  bool library = false;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_DEADLINE_SPEC_H_
