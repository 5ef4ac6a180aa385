// tests/model/fuzz_ops.h
// -----------------------------------------------------------------------------
// The fuzzers' operations: each decodes its arguments from the input, applies
// itself to the real timer and to the model, and returns "" when their
// results agree (the whole state is compared after every operation by
// RunFuzzInput(), tests/model/fuzz_harness.cc), else what differs. One set of
// operations serves both timer types; the two opcode tables below keep the
// byte formats of the two committed corpora. The race operations, which use
// a second thread, are tests/model/fuzz_races.h.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {

// What every operation works on. RunFuzzInput() owns one per input.
struct FuzzContext {
  FuzzContext(RealSide& real_side, TimerModel& timer_model,
              const FuzzConfig& config)
      : real(real_side),
        model(timer_model),
        local(config.kind == TimerKind::kLocal),
        tick(config.tick_nanos),
        wheel(real_side.ticks_per_wheel()),
        unlimited(config.max_pending == 0),
        start(config.clock_start) {}

  RealSide& real;
  TimerModel& model;
  const bool local;      // a LocalTimer
  const int64_t tick;    // tick_duration in nanoseconds
  const int64_t wheel;   // ticks_per_wheel (after a LocalTimer's rounding)
  const bool unlimited;  // max_pending unset: no rejection depends on order
  const int64_t start;   // the clock's first reading
  int64_t ticks_left = kMaxTicksPerInput;
  std::string trace;  // one line per operation, for the mismatch report

  // An advance decoded from `byte`, cut to what is left of the input's
  // tick budget, and charged to it.
  int64_t TakeAdvance(uint8_t byte) {
    const int64_t nanos =
        std::min(DecodeAdvance(byte, tick, wheel), ticks_left * tick);
    ticks_left -= nanos / tick;
    return nanos;
  }
};

// The Timer fuzzer's opcode byte (tests/fuzz_corpus/):
//   below 0xF0, the low four bits:
//     0-5   newTimeout(delay, action)          [delay] [action]
//     13    newTimeout with an empty task      [delay] [action]
//     6, 7  cancel()                           [timeout]
//     14    cancel() of the newest timeout
//     8-10  advance the clock and settle       [advance]
//     11    stop()
//     12    takeTask()                         [timeout]
//     15    destroy the Timer (the handles stay)
//   0xF0-0xF7  a race (RunTimerRace(), fuzz_races.h), kind the low three bits
//   0xF8-0xFF  the calls added after the first corpus, kind the low three
//              bits:
//     0  newTimeoutAt(now + delay, action)   [delay] [action]: a clock
//        reading, saturated; negative delays give deadlines in the past
//     1  cancelAll() from the test thread
//     2  reset(delay) on a timeout           [timeout] [delay]
//     3  resetAt(now + delay) on a timeout   [timeout] [delay]
//     4  newPeriodic(initial, period)        [initial] [period] [flags]
//        (DecodePeriodicAction()), and with flags bit 7 [policy]: the
//        missed-run policy as a last argument (DecodeMissed())
//     5  a race of reset() or cancelAll() (RunResetRace(), fuzz_races.h)
//     6  newTimeout(delay, action) with a task that also calls cancelAll()
//                                            [delay] [action]
//     7  reset(delay) on the newest timeout  [delay]
// Once the Timer is destroyed only the operations on handles act (cancel(),
// takeTask(), reset(), races); the others read no argument.
std::string RunTimerOp(uint8_t raw, Reader& in, FuzzContext& c);

// The LocalTimer fuzzer's opcode byte (tests/local_timer_fuzz_corpus/), the
// low four bits:
//   0-2  newTimeout(delay, action)                  [delay] [action]
//   3    newTimeoutAt(now + delay, action)          [delay] [action]
//   4    newPeriodic(initial, period)               [initial] [period]
//        [flags], with flags bit 7 [policy] (kFuzzLocalMissedRuns)
//   5    cancel()                                   [timeout]
//   6    cancel() of the newest timeout
//   7, 8 move the clock, then advance()             [advance]
//   9    follow the plan: move the clock to nextWakeup() and advance(),
//        until a task runs or nothing is planned; each advance() that runs
//        nothing must move the plan later, and the model's earliest run
//        time must be reached within kMaxPlanSteps wakes
//   10   stop()
//   11   takeTask()                                 [timeout]
//   12   reset(delay)                               [timeout] [delay]
//   13   resetAt(now + delay)                       [timeout] [delay]
//   14   a race with a second thread (RunLocalRace(), fuzz_races.h)
//   15   [kind], modulo 6: 0 cancelAll(); 1 newTimeout() whose task calls
//        cancelAll() [delay] [action]; 2 newTimeout() with an empty task
//        [delay] [action]; 3 advance() with the clock standing still;
//        4 ~LocalTimer (the handles stay); 5 reset(delay) of the newest
//        timeout [delay]
// Once the LocalTimer is destroyed only the operations on handles act (5, 6,
// 11-14); the others read no argument. A deadline further than kFarDeadline
// from startTime is scheduled as one that never comes (kFuzzLocalEndOfRange).
std::string RunLocalOp(uint8_t opcode, Reader& in, FuzzContext& c);

// Whether the LocalTimer's plan is checked after opcode `opcode`: not after
// a cancel() or a race, so that advance() takes cross-thread cancellations
// in itself as often as nextWakeup() does.
bool LocalChecksPlanAfter(uint8_t opcode);

// Wakes that following the plan may take to reach a run time: far
// timeouts move down one level per wake at most, and a 1-bucket wheel of
// 1 ns ticks has a level per bit of the clock.
inline constexpr int kMaxPlanSteps = 256;

// A [timeout] byte picks one of the timeouts so far, modulo their number;
// with none yet, operations on one read no more bytes and do nothing.

// The operations both tables and the races share.
std::string NewTimeout(FuzzContext& c, bool empty_task, absl::Duration delay,
                       const TaskAction& action);
std::string Cancel(FuzzContext& c, int64_t id);
std::string CancelAll(FuzzContext& c);
// Moves the clock by `nanos` and lets the timer run what is due (a Timer's
// worker settles; a LocalTimer's advance()): its count of runs must match.
std::string Advance(FuzzContext& c, int64_t nanos);
std::string Stop(FuzzContext& c);
void Destroy(FuzzContext& c);

// stop()'s result: OK from the test thread, the same ids as the model's, and
// in deadline order (the order among equal deadlines is not specified).
std::string CompareStop(const TimerModel& model, Code code,
                        const std::vector<int64_t>& real_ids,
                        const std::vector<int64_t>& model_ids);

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_OPS_H_
