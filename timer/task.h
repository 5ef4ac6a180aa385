// timer/task.h
// -----------------------------------------------------------------------------
// What Timer::newTimeout(), newTimeoutAt() and newPeriodic() accept as a task.
// Include timer/timer.h, which includes this file.
//
// A task is any callable invocable as `void(const Timeout&)` or as `void()`
// (a result, if any, is ignored): a lambda, a function or function pointer,
// a std::function, a TimerTask (timer/timeout.h). The TimerTaskCallable
// concept names exactly that; anything else is refused at compile time with
// a message that says what to do (a move-only lambda passed as an lvalue:
// pass it with std::move). A task that takes its Timeout can, e.g., cancel
// its own periodic timeout or look at its deadline. An empty callable (a null
// function pointer, an empty std::function or TimerTask) is refused at run
// time with InvalidArgument.
//
// Cost: pass the callable itself rather than a TimerTask made from it. A
// callable of at most 16 bytes and 8-byte alignment whose move constructor
// does not throw is stored inside the timeout itself; a TimerTask (whose type
// is erased already) and other callables take one more allocation, and so
// does every periodic task (one, for all its runs). A callable whose move
// constructor may throw is boxed, so that takeTask() never throws.

#ifndef TICKWHEEL_TIMER_TASK_H_
#define TICKWHEEL_TIMER_TASK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <concepts>
#include <type_traits>

#include "tickwheel/timer/timeout.h"

namespace tickwheel {

// A callable that can be a timer task: invocable as void(const Timeout&) or
// void(), and constructible from what is passed (copied from an lvalue,
// moved from an rvalue).
template <typename F>
concept TimerTaskCallable = std::constructible_from<std::decay_t<F>, F> &&
    (std::invocable<std::decay_t<F>&, const Timeout&> ||
     std::invocable<std::decay_t<F>&>);

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_TASK_H_
