// tests/local_timer_fuzzer.cc
// -----------------------------------------------------------------------------
// libFuzzer entry point of the LocalTimer fuzzer: every input is decoded into
// a LocalTimer configuration and a sequence of operations, applied to a real
// LocalTimer on a ManualClock and to the reference model
// (tests/model/local_timer_model.h), and any difference aborts with a report
// of the operations and the model's state. See
// tests/model/local_fuzz_harness.h for the input format and
// docs/RELIABILITY.md for how CI runs it (tools/fuzz.sh).
//
// //tests:local_timer_fuzz_regression_test replays the committed corpus
// through RunLocalFuzzInput() in the ordinary, gcc-built suite; this file is
// Bazel's only (tests/CMakeLists.txt leaves it out of the test support
// library, where its LLVMFuzzerTestOneInput would clash with the Timer
// fuzzer's).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/model/local_fuzz_harness.h"

// Prints how many operations the run executed (libFuzzer counts inputs only);
// tools/fuzz.sh quotes it.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  std::atexit([] {
    std::fprintf(
        stderr,
        "local_timer_fuzzer: %lld operations executed, %lld of them races\n",
        static_cast<long long>(tickwheel::model::LocalFuzzOpsExecuted()),
        static_cast<long long>(tickwheel::model::LocalFuzzRacesExecuted()));
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string failure = tickwheel::model::RunLocalFuzzInput(data, size);
  if (!failure.empty()) {
    std::fprintf(stderr, "%s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
