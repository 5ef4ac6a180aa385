// tests/model/fuzz_harness.h
// -----------------------------------------------------------------------------
// The differential harness behind both fuzzers (tests/timer_fuzzer.cc,
// tests/local_timer_fuzzer.cc) and their regression tests: decodes a byte
// string into a timer configuration and a sequence of operations, applies
// each operation to a real timer on a ManualClock (a tickwheel::Timer,
// settled after every advance so that the comparison is exact, or a
// tickwheel::LocalTimer driven by the calling thread as an event loop drives
// it) and to the reference TimerModel (tests/model/timer_model.h) of the same
// kind, and compares after every operation:
//
//   * the result of the operation (status code, cancel()'s and reset()'s
//     bool, cancelAll()'s count, the count of runs of an advance (a
//     LocalTimer's advance()'s result), the ids returned by stop() and their
//     order by deadline, takeTask());
//   * pendingTimeouts() and metrics().expired;
//   * everything tasks did, in order: which task ran, in which tick (a
//     Timer's metrics().ticks inside the task) or advance() (a LocalTimer's),
//     at which clock reading, and what it scheduled, cancelled or tried to
//     stop, with the results; the model checks its own history against the
//     contract (TimerModel::CheckContract()): never early, a one-shot task
//     runs at most once, a Timer's ticks in order, a LocalTimer's deadline
//     order within one advance() and a task's children never in its own;
//   * for every task ever handed to newTimeout(), newTimeoutAt() or
//     newPeriodic(): whether its captures are alive (captures are counted
//     objects), isExpired(), isCancelled(), isPeriodic() and deadline();
//   * how many task exceptions the timer logged;
//   * a LocalTimer's plan, after every operation but a cancel() or a race
//     (whose cancellations the next advance() then takes in itself):
//     nextWakeup() is nullopt with nothing pending, present and never later
//     than the model's earliest run time when one will come (earlier is
//     allowed: far timeouts move down a level, a reset() to later leaves the
//     old filing); pollTimeoutMs() is -1, 0, or the milliseconds until it
//     rounded up.
//
// At the end the timer is stopped and destroyed, and every capture must be
// gone: nothing run twice, nothing lost, nothing leaked.
//
// The harness, one job per file (all in tests/model/):
//   fuzz_input.{h,cc}        the input bytes: the configuration, delays,
//                            periods, advances, task actions
//   fuzz_real_side.{h,cc}    the real timer on a ManualClock, its handles
//                            by id, and the log of what its tasks did
//   fuzz_ops.{h,cc}          the operations, and the two opcode tables
//                            (RunTimerOp(), RunLocalOp())
//   fuzz_races.{h,cc}        the second thread (Racer) and the races of
//                            cancel() and takeTask()
//   fuzz_reset_races.cc      a Timer's races of reset() and cancelAll(), and
//                            reset() against the expiry within a tick
//                            (RunResetRace())
//   fuzz_harness.cc          RunFuzzInput(): the loop over the operations,
//                            the comparison, and the end
//
// Input format (bytes; a missing byte reads as 0, so every input is valid):
//   byte 0   tick (bits 0-2: 1, 2, 3, 7, 10, 100, 1000 or 1e6 ns) and
//            ticks_per_wheel (bits 3-5: 1, 2, 3, 4, 5, 8, 16, 64; a
//            LocalTimer rounds it up to a power of two)
//   byte 1   max_pending (bits 0-3: 0-5 unlimited, else 1-10); bit 4: a
//            Timer's inline task_executor, a LocalTimer's slack of 0
//            (kFuzzLocalSlackBelowTick); clock start (bits 5-6: 0, 1, 1e9 - 1
//            or 2^60 ns; bit 7: negated, minus one, which a LocalTimer takes
//            positive unless kFuzzLocalEndOfRange)
//   then up to kMaxOps operations, each an opcode byte and its arguments:
//   the Timer's table is RunTimerOp(), the LocalTimer's RunLocalOp()
//   (fuzz_ops.h); their arguments' encodings are in fuzz_input.h. The two
//   tables differ only because each corpus was grown on its own.
//
// The Timer's corpus (tests/fuzz_corpus/) is what libFuzzer kept, minimised for
// edge coverage, plus hand-written seed_* files that pin scenarios coverage
// cannot tell apart (each fails against a planted bug that the rest let
// through):
//   seed_cascade_order        tick 10 ns, 4 buckets: a timeout due at tick 4
//                             (an upper level), advance to 40 ns, a second one
//                             due at tick 4: the first must still run first.
//   seed_wake_one_tick_early  the worker sleeps until tick 2; a timeout due at
//                             tick 1 must wake it, and run when the clock
//                             reaches 20 ns.
//   seed_race_*               one race operation of each kind on a timeout
//                             still in its producer's lane (two cancels,
//                             cancel against a copy, an advance, stop(),
//                             ~Timer; two takeTask()s after stop()), and of
//                             each kind of RunResetRace (seed_race_reset_
//                             within_tick: resets racing the expiry within a
//                             tick on a slack-0 timer).
//   seed_new_timeout_at       an absolute deadline sharing a tick with a
//                             relative one, one in the past, one at the end
//                             of the clock's range.
//   seed_cancel_all*          cancelAll() from the test thread (count, and
//                             0 with nothing pending) and from a task (with
//                             the child it scheduled just before).
//   seed_reset_*              reset() later (also inside one catch-up pass),
//                             earlier, to the current tick boundary, resetAt()
//                             in the past and to the end of the clock, and
//                             reset() of a timeout that ran, was cancelled,
//                             stopped, or outlived its Timer.
//   seed_periodic*            runs on the grid, missed runs skipped, a reset()
//                             of the next run, stop() returning a periodic
//                             timeout; a periodic task cancelling itself and
//                             calling cancelAll(), with the inline executor.
//   seed_periodic_missed_runs*  the three missed-run policies through a
//                             stall of five periods, beside a one-shot
//                             timeout; with the inline executor, a burst
//                             that cancels itself in its third run.
//   seed_periodic_burst_bound  a 1 ns period stalled for 63 us: the burst
//                             runs the latest kMaxBurstRuns missed runs.
//   seed_catch_up_moved_and_children  one advance over many ticks with
//                             timeouts reset() later inside it and tasks that
//                             schedule children: the moved ones run in their
//                             ticks' turn, the children after the pass.
//   seed_saturated_deadlines_tie  deadlines past the end of the clock's range
//                             tie in stop()'s order.

// The LocalTimer's corpus (tests/local_timer_fuzz_corpus/) likewise, its
// hand-written seed_* files each pinning one scenario:
//   seed_periodic_plan       a periodic timeout followed through the plan,
//                            then a late loop that skips missed runs
//   seed_reset_later_plan    a reset() to later: the plan may come early and
//                            advance() then runs nothing; following it on
//                            reaches the new deadline
//   seed_far_cascade         a deadline many wheel turns away reached by
//                            following the plan (each level's move a wake)
//   seed_cancel_all_task     cancelAll() from a task, with the child it
//                            scheduled just before
//   seed_stop_from_task      stop() from a task ends the advance(); the next
//                            stop() returns the rest, earliest first
//   seed_children_deferred   tasks scheduling due children: they run in the
//                            next advance(), not the running one
//   seed_race_cancel_advance cancel() from a second thread racing advance()
//                            (a one-shot and a periodic timeout), stop(),
//                            cancelAll() and ~LocalTimer
//   seed_deadline_order_in_tick  deadlines within one tick run in deadline
//                            order, ties in the order scheduled (it asks for
//                            slack 0, which kFuzzLocalSlackBelowTick gates)

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/model/timer_model.h"

namespace tickwheel::model {

// Runs one input against a timer of `kind`. Returns "" when the timer and
// the model agree throughout, else a description of the first difference
// with the decoded operations and the model's state.
std::string RunFuzzInput(TimerKind kind, const uint8_t* data, size_t size);

// Operations executed by RunFuzzInput() for `kind` in this process so far,
// and how many of them were race operations.
int64_t FuzzOpsExecuted(TimerKind kind);
int64_t FuzzRacesExecuted(TimerKind kind);

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_
