// tests/model/local_fuzz_harness.h
// -----------------------------------------------------------------------------
// The differential harness behind tests/local_timer_fuzzer.cc: decodes a byte
// string into a LocalTimer configuration and a sequence of operations,
// applies each to a real tickwheel::LocalTimer on a ManualClock, driven by
// the calling thread as an event loop drives it, and to the reference
// LocalTimerModel (tests/model/local_timer_model.h), and compares after every
// operation:
//
//   * the result of the operation (status codes, cancel()'s and reset()'s
//     bool, cancelAll()'s count, advance()'s count of runs, the ids stop()
//     returns and their order by deadline, takeTask());
//   * every task event in order: which task ran, in which advance() (from
//     metrics().wakeups), at which clock reading, what it scheduled,
//     cancelled, or whether it stopped the timer; so that deadline order
//     within one advance(), never early, and a task's children waiting for
//     a later advance() are checked on the real run (the model checks its
//     own history against them: LocalTimerModel::CheckContract());
//   * pendingTimeouts(), metrics().expired, the task exceptions logged;
//   * for every task: whether its captures are alive, isExpired(),
//     isCancelled(), isPeriodic() and deadline();
//   * the plan, after every operation but a cancel() or a race (whose
//     cancellations the next advance() then takes in itself): nextWakeup()
//     is nullopt with nothing pending, present and never later than the
//     model's earliest run time when one will come (earlier is allowed:
//     far timeouts move down a level, a reset() to later leaves the old
//     filing); pollTimeoutMs() is -1, 0, or the milliseconds until it
//     rounded up.
//
// At the end the timer is stopped and destroyed, and every capture must be
// gone. The harness's files (tests/model/): local_fuzz_real_side.{h,cc} the
// LocalTimer and its tasks; local_fuzz_ops.{h,cc} the operations and races;
// local_fuzz_harness.cc the loop, the comparison and the end. It shares the
// Timer fuzzer's input decoding (fuzz_input.h), task actions and events
// (timer_model.h) and second thread (fuzz_races.h).
//
// Input format (bytes; a missing byte reads as 0, so every input is valid):
//   byte 0   tick and ticks_per_wheel, as the Timer fuzzer's (fuzz_harness.h;
//            a LocalTimer rounds ticks_per_wheel up to a power of two)
//   byte 1   max_pending (bits 0-3), slack 0 instead of one tick (bit 4,
//            where kFuzzLocalSlackBelowTick allows), clock start (bits 5-7),
//            as the Timer fuzzer's
//   then up to kMaxOps operations, each an opcode byte (its low four bits)
//   and its arguments (local_fuzz_ops.h).
//
// The corpus is tests/local_timer_fuzz_corpus/, its hand-written seed_*
// files each pinning one scenario:
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

#ifndef TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_HARNESS_H_
#define TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace tickwheel::model {

// Runs one input. Returns "" when the LocalTimer and the model agree
// throughout, else the first difference with the operations and the
// model's state.
std::string RunLocalFuzzInput(const uint8_t* data, size_t size);

// Operations executed by RunLocalFuzzInput() in this process so far, and
// how many of them were races with a second thread.
int64_t LocalFuzzOpsExecuted();
int64_t LocalFuzzRacesExecuted();

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_HARNESS_H_
