// tests/model/fuzz_entry.h
// -----------------------------------------------------------------------------
// The body of both libFuzzer entry points (tests/timer_fuzzer.cc,
// tests/local_timer_fuzzer.cc): every input is decoded into a timer
// configuration and a sequence of operations, applied to a real timer on a
// ManualClock and to the reference model (tests/model/fuzz_harness.h), and
// any difference aborts with a report of the operations and the model's
// state. docs/RELIABILITY.md says how CI runs them (tools/fuzz.sh).

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_ENTRY_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/model/fuzz_harness.h"

namespace tickwheel::model {

// Prints at exit how many operations the run executed (libFuzzer counts
// inputs only), as "<name>: N operations executed, M of them races", which
// tools/fuzz.sh quotes.
template <TimerKind kKind>
void PrintCountsAtExit() {
  std::atexit([] {
    std::fprintf(
        stderr, "%s: %lld operations executed, %lld of them races\n",
        kKind == TimerKind::kLocal ? "local_timer_fuzzer" : "timer_fuzzer",
        static_cast<long long>(FuzzOpsExecuted(kKind)),
        static_cast<long long>(FuzzRacesExecuted(kKind)));
  });
}

inline void FuzzOneInput(TimerKind kind, const uint8_t* data, size_t size) {
  const std::string failure = RunFuzzInput(kind, data, size);
  if (!failure.empty()) {
    std::fprintf(stderr, "%s\n", failure.c_str());
    std::abort();
  }
}

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_ENTRY_H_
