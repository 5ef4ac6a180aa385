// tests/model/local_fuzz_ops.h
// -----------------------------------------------------------------------------
// The LocalTimer fuzzer's operations (tests/model/local_fuzz_harness.h): each
// decodes its arguments, applies itself to the real LocalTimer and to the
// model, and returns "" when their results agree, else what differs. The
// whole state is compared after each by RunLocalFuzzInput().

#ifndef TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_OPS_H_
#define TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_OPS_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "tests/model/fuzz_harness.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/local_fuzz_real_side.h"
#include "tests/model/local_timer_model.h"

namespace tickwheel::model {

// What every operation works on. RunLocalFuzzInput() owns one per input.
struct LocalFuzzContext {
  LocalFuzzContext(LocalRealSide& real_side, LocalTimerModel& local_model,
                   const LocalFuzzConfig& config)
      : real(real_side),
        model(local_model),
        tick(config.base.tick_nanos),
        wheel(real_side.ticks_per_wheel()),
        unlimited(config.base.max_pending == 0),
        start(config.base.clock_start) {}

  LocalRealSide& real;
  LocalTimerModel& model;
  const int64_t tick;    // tick_duration in nanoseconds
  const int64_t wheel;   // ticks_per_wheel, after rounding
  const bool unlimited;  // max_pending unset: no rejection depends on order
  const int64_t start;   // startTime: the clock's reading at Create()
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

// Opcodes (the low four bits of the opcode byte) and their arguments:
//   0-2  newTimeout(delay, action)                  [delay] [action]
//   3    newTimeoutAt(now + delay, action)          [delay] [action]
//   4    newPeriodic(initial, period)               [initial] [period]
//        [flags] (DecodePeriodicAction()), with flags bit 7 [policy]
//        (LocalPolicy())
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
//   14   a race with a second thread                [kind] [timeout] ...
//        (RunLocalRace())
//   15   [kind], modulo 6: 0 cancelAll(); 1 newTimeout() whose task calls
//        cancelAll() [delay] [action]; 2 newTimeout() with an empty task
//        [delay] [action]; 3 advance() with the clock standing still;
//        4 ~LocalTimer (the handles stay); 5 reset(delay) of the newest
//        timeout [delay]
// A [timeout] byte picks one of the timeouts so far, modulo their number;
// with none yet, operations on one read no more bytes and do nothing. Once
// the LocalTimer is destroyed only the operations on handles act (5, 6,
// 11-13, and races of two cancel()s); the others read no argument.
std::string RunLocalOp(uint8_t opcode, Reader& in, LocalFuzzContext& c);

// Whether opcode `opcode` acts once the LocalTimer is destroyed.
bool LocalActsOnHandlesOnly(uint8_t opcode);

// Whether the plan is checked after opcode `opcode`: not after a cancel()
// or a race, so that advance() takes cross-thread cancellations in itself
// as often as nextWakeup() does.
bool LocalChecksPlanAfter(uint8_t opcode);

// Wakes that following the plan may take to reach a run time: far
// timeouts move down one level per wake at most, and a 1-bucket wheel of
// 1 ns ticks has a level per bit of the clock.
inline constexpr int kMaxPlanSteps = 256;

// A race (opcode 14): the test thread (the owner) and the racer act at the
// same moment; the outcome must be one that some order of the two calls
// gives. Kinds (the byte after the opcode, modulo 8; then [timeout]):
//   0, 1     cancel() from both threads through the one handle object: one
//            wins iff the timeout was pending
//   2, 3, 4  the racer's cancel() while the owner calls advance() (after
//            moving the clock by [advance]): the cancel() came first, or
//            after the advance(), or (a periodic timeout) during its run in
//            it, before or after what its task does; the model plays each
//            and the real outcome (the
//            cancel()'s result, advance()'s count, every event, the pending
//            count) must be one of them: exactly once
//   5        the racer's cancel() while the owner calls stop(): each
//            timeout cancelled or returned, once
//   6        the racer's cancel() while the owner calls cancelAll(): the
//            timeout cancelled by exactly one of them, the count the rest
//   7        the racer's cancel() while the owner destroys the LocalTimer
// Kinds 2-7 act as kind 0 once the LocalTimer is destroyed; kinds 2-4 do
// too with max_pending set, where a task's child may be rejected or not
// depending on where in the advance() the cancel() lands.
std::string RunLocalRace(Reader& in, LocalFuzzContext& c);

// stop()'s result: the same ids as the model's, in deadline order (the
// order among equal deadlines is not specified).
std::string CompareLocalStop(const LocalTimerModel& model,
                             const std::vector<int64_t>& real_ids,
                             const std::vector<int64_t>& model_ids);

// Counts one race (LocalFuzzRacesExecuted()).
void CountLocalRace();

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_OPS_H_
