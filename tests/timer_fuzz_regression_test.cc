// tests/timer_fuzz_regression_test.cc
// -----------------------------------------------------------------------------
// The Timer fuzzer's harness (tests/model/fuzz_harness.h) in the ordinary,
// gcc-built suite, under every sanitizer config: the committed corpus
// (tests/fuzz_corpus/), then fixed-seed random inputs
// (tests/model/fuzz_replay.h).

#include <gtest/gtest.h>

#include "tests/model/fuzz_replay.h"

namespace tickwheel::model {
namespace {

TEST(TimerFuzzRegressionTest, CommittedCorpus) {
  ReplayCorpus(TimerKind::kThreaded, "fuzz_corpus", 10);
}

TEST(TimerFuzzRegressionTest, FixedSeedRandomInputs) {
  ReplayRandomInputs(TimerKind::kThreaded);
}

}  // namespace
}  // namespace tickwheel::model
