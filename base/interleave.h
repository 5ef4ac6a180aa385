// base/interleave.h
// -----------------------------------------------------------------------------
// Internal. Interleaving points for testing the lock-free protocols.
//
// TICKWHEEL_INTERLEAVE_POINT() marks a step between two atomic operations of
// a hot path (a handle's cancel(), a lane's claim and take-back, a queue's
// push, the worker's arm and expiry, stop()'s drain). In an ordinary build it
// is nothing at all. The sanitizer builds (--config=asan, tsan, ubsan) compile
// the points in (TICKWHEEL_INTERLEAVE defined) but leave them off; a process
// whose environment sets TICKWHEEL_INTERLEAVE=1 turns them on
// (`bazel test --config=tsan --config=interleave //tests:stress_test`), and
// then each point may yield the CPU or sleep for a few microseconds, at
// random, so that another thread runs exactly there: interleavings that a
// real machine produces once in millions of calls become common in a test of
// a few seconds. Switching at run time lets the interleaved runs reuse the
// sanitizer builds instead of compiling the library twice more.
//
// What it covers and what it does not (docs/RELIABILITY.md): it widens the
// windows between the marked steps, on every thread that reaches them, in
// random order; it is not a model checker, so it cannot prove that no
// interleaving breaks a protocol, and it says nothing about reorderings that
// the memory model allows within one step (ThreadSanitizer covers those).
//
// Each thread draws from its own random sequence, seeded from the order in
// which threads first reach a point and from TICKWHEEL_INTERLEAVE_SEED
// (environment, default 1).

#ifndef TICKWHEEL_BASE_INTERLEAVE_H_
#define TICKWHEEL_BASE_INTERLEAVE_H_

#ifdef TICKWHEEL_INTERLEAVE

namespace tickwheel::internal {
// When TICKWHEEL_INTERLEAVE=1 was in the environment at the first call:
// yields one time in eight, sleeps 1-64 µs one time in sixty-four.
// Otherwise nothing.
void InterleavePoint() noexcept;
// Whether the points do anything in this process.
bool InterleavePointsOn() noexcept;
}  // namespace tickwheel::internal

#define TICKWHEEL_INTERLEAVE_POINT() ::tickwheel::internal::InterleavePoint()

#else

namespace tickwheel::internal {
// Not compiled in: never on, whatever the environment says.
inline bool InterleavePointsOn() noexcept { return false; }
}  // namespace tickwheel::internal

#define TICKWHEEL_INTERLEAVE_POINT() static_cast<void>(0)

#endif  // TICKWHEEL_INTERLEAVE

#endif  // TICKWHEEL_BASE_INTERLEAVE_H_
