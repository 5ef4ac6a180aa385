// tests/timer_fuzzer.cc
// -----------------------------------------------------------------------------
// libFuzzer entry point of the Timer fuzzer (tests/model/fuzz_entry.h; the
// input format is in tests/model/fuzz_harness.h). Bazel's only:
// //tests:timer_fuzz_regression_test replays the committed corpus through
// the same harness in the ordinary, gcc-built suite.

#include <cstddef>
#include <cstdint>

#include "tests/model/fuzz_entry.h"

using ::tickwheel::model::TimerKind;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  tickwheel::model::PrintCountsAtExit<TimerKind::kThreaded>();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tickwheel::model::FuzzOneInput(TimerKind::kThreaded, data, size);
  return 0;
}
