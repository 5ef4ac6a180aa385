// durable/mutex.h
// -----------------------------------------------------------------------------
// Internal. durable/'s names for the base layer's annotated mutex
// (base/mutex.h): a std::mutex that clang's -Wthread-safety can see, and
// MutexLock, its scoped guard. Waiting: std::condition_variable_any with the
// Mutex itself, while a MutexLock holds it.

#ifndef TICKWHEEL_DURABLE_MUTEX_H_
#define TICKWHEEL_DURABLE_MUTEX_H_

#include "tickwheel/base/mutex.h"

namespace tickwheel::durable::internal {

using ::tickwheel::internal::Mutex;
using ::tickwheel::internal::MutexLock;

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_MUTEX_H_
