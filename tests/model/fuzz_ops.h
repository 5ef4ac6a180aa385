// tests/model/fuzz_ops.h
// -----------------------------------------------------------------------------
// The fuzzer's operations on one thread: each decodes its arguments from the
// input, applies itself to the real timer and to the model, and returns ""
// when their results agree (the state is compared after every operation by
// RunFuzzInput(), tests/model/fuzz_harness.cc), else what differs. The race
// operations, which use a second thread, are tests/model/fuzz_races.h.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_

#include <cstdint>
#include <string>

#include "tests/model/fuzz_context.h"
#include "tests/model/fuzz_input.h"

namespace tickwheel::model {

// The first operations (opcode bytes below 0xF0; the opcode is the low four
// bits, its arguments the bytes after it):
//   0-5   newTimeout(delay, action)          [delay] [action]
//   13    newTimeout with an empty task      [delay] [action]
//   6, 7  cancel()                           [timeout]
//   14    cancel() of the newest timeout
//   8-10  advance the clock and settle       [advance]
//   11    stop()
//   12    takeTask()                         [timeout]
//   15    destroy the Timer (the handles stay)
// A [timeout] byte picks one of the timeouts so far, modulo their number;
// with none yet, cancel() and takeTask() read no byte and do nothing.
std::string RunOp(uint8_t opcode, Reader& in, FuzzContext& c);

// Whether opcode `opcode` still runs once the Timer is destroyed (6, 7 and
// 12: only handles are left); the others are skipped, reading no argument.
bool ActsOnHandlesOnly(uint8_t opcode);

// The operations on the calls added after the first corpus (opcode bytes
// 0xF8-0xFF, `kind` the low three bits; earlier inputs spell their race
// opcodes 0xF0-0xF7 only):
//   0  newTimeoutAt(now + delay, action)   [delay] [action]: a clock reading,
//      saturated; negative delays give deadlines in the past
//   1  cancelAll() from the test thread; its count must match
//   2  reset(delay) on a timeout           [timeout] [delay]
//   3  resetAt(now + delay) on a timeout   [timeout] [delay]
//   4  newPeriodic(initial, period)        [initial] [period] [flags]
//      (DecodePeriodicAction()), and with flags bit 7 [policy]: the
//      missed-run policy as a last argument (DecodeMissed())
//   5  a race between two threads (RunResetRace(), fuzz_races.h)
//   6  newTimeout(delay, action) with a task that also calls cancelAll()
//                                          [delay] [action]
//   7  reset(delay) on the newest timeout  [delay]
// Compared exactly against the model, as the operations above, except for
// the races and the order within a tick of reset and periodic timeouts
// (tests/model/timer_model.h). Once the Timer is destroyed, kinds 0, 1, 4
// and 6 are skipped, reading no argument.
std::string RunLaterOp(int kind, Reader& in, FuzzContext& c);

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_
