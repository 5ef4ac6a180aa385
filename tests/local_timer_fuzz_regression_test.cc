// tests/local_timer_fuzz_regression_test.cc
// -----------------------------------------------------------------------------
// The LocalTimer fuzzer's harness (tests/model/fuzz_harness.h) in the
// ordinary, gcc-built suite, under every sanitizer config: the committed
// corpus (tests/local_timer_fuzz_corpus/), then fixed-seed random inputs
// (tests/model/fuzz_replay.h).

#include <gtest/gtest.h>

#include "tests/model/fuzz_replay.h"

namespace tickwheel::model {
namespace {

TEST(LocalTimerFuzzRegressionTest, CommittedCorpus) {
  ReplayCorpus(TimerKind::kLocal, "local_timer_fuzz_corpus", 8);
}

TEST(LocalTimerFuzzRegressionTest, FixedSeedRandomInputs) {
  ReplayRandomInputs(TimerKind::kLocal);
}

}  // namespace
}  // namespace tickwheel::model
