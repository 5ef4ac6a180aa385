// base/fork_guard.h
// -----------------------------------------------------------------------------
// Internal. HoldAcrossFork(): the one pthread_atfork registration for
// tickwheel's process-wide mutexes (the node pool's depots, the lane arrays'
// free list), so that a child of fork() never inherits one of them locked by
// a thread that does not exist in the child (glibc's malloc does the same for
// its arenas).
//
// Before fork() every registered mutex is locked, in registration order;
// after it, the parent unlocks them in reverse order, and the child first
// runs each one's `in_child` repair (e.g. forget threads that were mapping
// memory: they do not exist there) and then unlocks it. Registrations are
// for mutexes that live as long as the process; at most kMaxForkGuards of
// them are held (later ones are not, and HoldAcrossFork() returns false).
//
// Thread-safe: registrations may race each other and a fork(); a mutex that
// is registered concurrently with a fork() may or may not be held for it
// (it cannot be in use yet).

#ifndef TICKWHEEL_BASE_FORK_GUARD_H_
#define TICKWHEEL_BASE_FORK_GUARD_H_

#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {

inline constexpr int kMaxForkGuards = 32;

// Holds `mu` across every later fork(); `in_child(arg)`, if given, runs in
// the child with `mu` still held. False if the table is full.
bool HoldAcrossFork(Mutex* mu, void (*in_child)(void* arg) = nullptr,
                    void* arg = nullptr);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_FORK_GUARD_H_
