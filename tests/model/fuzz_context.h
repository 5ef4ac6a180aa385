// tests/model/fuzz_context.h
// -----------------------------------------------------------------------------
// What every fuzzer operation works on: the real side and the model, the
// geometry the arguments are decoded with, what is left of the input's tick
// budget, and the trace of the operations so far (printed with a mismatch).
// RunFuzzInput() (tests/model/fuzz_harness.cc) owns one per input.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_CONTEXT_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_CONTEXT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "tests/model/fuzz_harness.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {

struct FuzzContext {
  FuzzContext(RealSide& real_side, TimerModel& timer_model,
              const FuzzConfig& config)
      : real(real_side),
        model(timer_model),
        tick(config.tick_nanos),
        wheel(real_side.ticks_per_wheel()),
        unlimited(config.max_pending == 0) {}

  RealSide& real;
  TimerModel& model;
  const int64_t tick;    // tick_duration in nanoseconds
  const int64_t wheel;   // ticks_per_wheel
  const bool unlimited;  // max_pending unset: no rejection depends on order
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

// Counts one race operation (FuzzRacesExecuted()).
void CountRace();

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_CONTEXT_H_
