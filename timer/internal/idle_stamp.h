// timer/internal/idle_stamp.h
// -----------------------------------------------------------------------------
// IdleStamp: the one field of an idle registration that IdleHandle::touch()
// writes inline. The registration itself (internal::IdleEntry,
// timer/idle/idle_entry.h) derives from it, so the public header declares
// what touch() needs and nothing of the entry's state machine.
//
// `stamp` is the coarse clock's ceiling at the last touch(). Any thread
// stores it and the checks load it, both relaxed: it carries no other data,
// and a check that misses a racing touch() sees it at its next check
// (idle_entry.h, "Thread-safety").

#ifndef TICKWHEEL_TIMER_INTERNAL_IDLE_STAMP_H_
#define TICKWHEEL_TIMER_INTERNAL_IDLE_STAMP_H_

#include <atomic>
#include <cstdint>

namespace tickwheel::internal {

struct IdleStamp {
  std::atomic<int64_t> stamp{0};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_IDLE_STAMP_H_
