// The consumer's own timer/timer.h: an application header whose path is the
// same as tickwheel's timer/ folder. tickwheel's headers are included as
// "tickwheel/timer/...", so the two never collide.
#ifndef CONSUMER_TIMER_TIMER_H_
#define CONSUMER_TIMER_TIMER_H_

namespace app {
// How long this application gives a request, in milliseconds.
inline constexpr int kRequestBudgetMs = 10;
}  // namespace app

#endif  // CONSUMER_TIMER_TIMER_H_
