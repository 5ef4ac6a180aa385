// worker/lane_arrays.h
// -----------------------------------------------------------------------------
// Internal. Type-stable memory for the cell arrays of fast lanes
// (worker/lane.h): an array, once allocated, stays an array of lane cells for
// the life of the process. A lane that is destroyed gives its array back
// here, and the next lane of the same size takes it.
//
// Why: Timeout::cancel() takes a node back out of its lane cell with a CAS
// through the cell's address, recorded in the node (worker/timeout_node.h),
// before it has done anything that keeps the timer alive. If the timer has
// been destroyed meanwhile, that CAS lands in an array that is free here or
// owned by another lane; it fails there, because a cell only ever holds
// items published into it and each item is published once. Freeing the
// array instead would make that CAS a write to freed memory.
//
// The memory is never returned to the system. A program holds at most as
// many arrays as it ever had lanes alive at once (tickwheel: 128 KiB per
// producer shard that scheduled, 8 shards per timer).
//
// Thread-safety: thread-safe. The free list is under a mutex held across
// fork() (base/fork_guard.h), so a child never inherits it locked. Take() and
// Give() are called once per lane (when its first producer claims a cell, and
// when it is destroyed).

#ifndef TICKWHEEL_WORKER_LANE_ARRAYS_H_
#define TICKWHEEL_WORKER_LANE_ARRAYS_H_

#include <cstddef>

namespace tickwheel::internal {

// `bytes` bytes aligned to 64, from a given-back array of the same size when
// there is one, else newly allocated (zeroed). Sets *reused: a reused array
// holds whatever its last lane left, and its owner must clear it with atomic
// stores (a late CAS from a cancel() of the old lane may still land on it).
// nullptr when out of memory.
void* TakeLaneArray(size_t bytes, bool* reused);

// Gives back an array from TakeLaneArray(bytes). Any thread.
void GiveLaneArray(void* array, size_t bytes);

// For tests: arrays given back and not yet taken again.
size_t FreeLaneArrays();

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_LANE_ARRAYS_H_
