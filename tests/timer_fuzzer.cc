// tests/timer_fuzzer.cc
// -----------------------------------------------------------------------------
// libFuzzer entry point: every input is decoded into a timer configuration and
// a sequence of operations, applied to a real Timer on a ManualClock and to the
// reference model (tests/model/), and any difference aborts with a report of
// the operations and the model's state. See tests/model/fuzz_harness.h for the
// input format and docs/RELIABILITY.md for how CI runs it (tools/fuzz.sh).
//
// The same function also runs, built with gcc, in the ordinary test suite:
// //tests:timer_fuzz_regression_test replays the committed corpus through it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/model/fuzz_harness.h"

// Prints how many operations the run executed (libFuzzer counts inputs only);
// tools/fuzz.sh quotes it.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  std::atexit([] {
    std::fprintf(stderr,
                 "timer_fuzzer: %lld operations executed, %lld of them races\n",
                 static_cast<long long>(tickwheel::model::FuzzOpsExecuted()),
                 static_cast<long long>(tickwheel::model::FuzzRacesExecuted()));
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string failure = tickwheel::model::RunFuzzInput(data, size);
  if (!failure.empty()) {
    std::fprintf(stderr, "%s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
