// The application's own timer/timer.h, a path that tickwheel's sources also
// have. tickwheel installs its headers under <prefix>/include/tickwheel/, so
// "timer/timer.h" finds this file and "tickwheel/timer/timer.h" finds
// tickwheel's, whatever the order of the include folders.
#ifndef INSTALLED_EXAMPLE_TIMER_TIMER_H_
#define INSTALLED_EXAMPLE_TIMER_TIMER_H_

namespace app {
// How long this application lets a connection stay silent, in milliseconds.
inline constexpr int kIdleTimeoutMs = 100;
}  // namespace app

#endif  // INSTALLED_EXAMPLE_TIMER_TIMER_H_
