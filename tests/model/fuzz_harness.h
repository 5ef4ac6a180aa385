// tests/model/fuzz_harness.h
// -----------------------------------------------------------------------------
// The differential harness behind tests/timer_fuzzer.cc: decodes a byte string
// into a timer configuration and a sequence of operations, applies each
// operation to a real tickwheel::Timer (on a ManualClock, settled after every
// advance so that the comparison is exact) and to the reference TimerModel
// (tests/model/timer_model.h), and compares after every operation:
//
//   * the result of the operation (status code, cancel()'s and reset()'s
//     bool, cancelAll()'s count, the ids returned by stop() and their order
//     by deadline, takeTask());
//   * pendingTimeouts();
//   * everything tasks did, in order: which task ran, in which tick
//     (metrics().ticks inside the task), at which clock reading, and what it
//     scheduled, cancelled or tried to stop, with the results;
//   * for every task ever handed to newTimeout(), newTimeoutAt() or
//     newPeriodic(): whether its captures are alive (captures are counted
//     objects), isExpired(), isCancelled(), isPeriodic() and deadline();
//   * how many task exceptions the worker logged.
//
// At the end the timer is stopped and destroyed, and every capture must be
// gone: nothing run twice, nothing lost, nothing leaked.
//
// The harness, one job per file (all in tests/model/):
//   fuzz_input.{h,cc}        the input bytes: the configuration, delays,
//                            periods, advances, task actions
//   fuzz_real_side.{h,cc}    the real Timer on a ManualClock, its handles
//                            by id, and the log of what its tasks did
//   fuzz_context.h           what every operation works on
//   fuzz_ops.{h,cc}          the operations on one thread (RunOp(),
//                            RunLaterOp())
//   fuzz_races.{h,cc}        the second thread (Racer) and the races of
//                            cancel() and takeTask() (RunRace())
//   fuzz_reset_races.cc      the races of reset() and cancelAll(), and
//                            reset() against the expiry within a tick
//                            (RunResetRace())
//   fuzz_compare.{h,cc}      the comparison with the model
//   fuzz_harness.cc          RunFuzzInput(): the loop over the operations,
//                            and the end
//
// Input format (bytes; a missing byte reads as 0, so every input is valid):
//   byte 0   tick (bits 0-2: 1, 2, 3, 7, 10, 100, 1000 or 1e6 ns) and
//            ticks_per_wheel (bits 3-5: 1, 2, 3, 4, 5, 8, 16, 64)
//   byte 1   max_pending (bits 0-3: 0-5 unlimited, else 1-10), inline
//            task_executor (bit 4), clock start (bits 5-6: 0, 1, 1e9 - 1 or
//            2^60 ns; bit 7: negated, minus one)
//   then up to kMaxOps operations, each an opcode byte and its arguments:
//   below 0xF0 the first operations (RunOp(), fuzz_ops.h: newTimeout,
//   cancel, advance, stop, takeTask, ~Timer); 0xF0-0xF7 a race operation
//   (RunRace(), fuzz_races.h): a second thread acts on the same handle object
//   at the same moment (two cancel()s, cancel() against a copy, an advance,
//   stop() or ~Timer, two takeTask()s), and the outcome must be one of the
//   orders the two calls could take; 0xF8-0xFF the later calls (RunLaterOp(),
//   fuzz_ops.h): newTimeoutAt(), cancelAll() from the test thread and from a
//   task, reset() and resetAt(), newPeriodic() (with or without a missed-run
//   policy), and (0xFD, RunResetRace(), fuzz_races.h) races of reset() against
//   cancel(), reset() and a clock advance, and of cancelAll() against cancel()
//   and stop(), checked by what every order of the two calls has in common; and
//   resets racing the expiry within a tick on a timer of its own with a slack
//   of 0, checked for never early and exactly once. The arguments' encodings
//   are in fuzz_input.h.
//
// The corpus (tests/fuzz_corpus/) is what libFuzzer kept, minimised for edge
// coverage, plus hand-written seed_* files that pin scenarios coverage cannot
// tell apart (each fails against a planted bug that the rest let through):
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

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace tickwheel::model {

// Operations decoded from one input at most; keeps one input to milliseconds.
inline constexpr int kMaxOps = 64;
// Ticks one input may advance the clock by in total.
inline constexpr int64_t kMaxTicksPerInput = 4096;

// Runs one input. Returns "" when the timer and the model agree throughout,
// else a description of the first difference with the decoded operations and
// the model's state.
std::string RunFuzzInput(const uint8_t* data, size_t size);

// Operations executed by RunFuzzInput() in this process so far, and how
// many of them were race operations.
int64_t FuzzOpsExecuted();
int64_t FuzzRacesExecuted();

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_HARNESS_H_
