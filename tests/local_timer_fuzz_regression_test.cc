// tests/local_timer_fuzz_regression_test.cc
// -----------------------------------------------------------------------------
// Runs the LocalTimer fuzzer's harness (RunLocalFuzzInput(),
// tests/model/local_fuzz_harness.h) in the ordinary, gcc-built test suite,
// under every sanitizer config: every file of the committed corpus
// (tests/local_timer_fuzz_corpus/), then fixed-seed random inputs. A
// difference between the LocalTimer and the model fails the test with the
// report.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/model/local_fuzz_harness.h"

namespace {

using ::tickwheel::model::LocalFuzzOpsExecuted;
using ::tickwheel::model::LocalFuzzRacesExecuted;
using ::tickwheel::model::RunLocalFuzzInput;

std::filesystem::path CorpusDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) {
    return "tests/local_timer_fuzz_corpus";
  }
  return std::filesystem::path(srcdir) / workspace / "tests" /
         "local_timer_fuzz_corpus";
}

TEST(LocalTimerFuzzRegressionTest, CommittedCorpus) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(CorpusDir())) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 8u) << "corpus missing under " << CorpusDir();
  const int64_t ops_before = LocalFuzzOpsExecuted();
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    EXPECT_EQ(RunLocalFuzzInput(bytes.data(), bytes.size()), "")
        << file.filename();
  }
  std::printf("corpus: %zu inputs, %lld operations\n", files.size(),
              static_cast<long long>(LocalFuzzOpsExecuted() - ops_before));
}

TEST(LocalTimerFuzzRegressionTest, FixedSeedRandomInputs) {
  std::mt19937 rng(20240401);
  const int64_t ops_before = LocalFuzzOpsExecuted();
  const int64_t races_before = LocalFuzzRacesExecuted();
  constexpr int kInputs = 200;
  for (int i = 0; i < kInputs; ++i) {
    std::vector<uint8_t> bytes(2 + rng() % 160);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    ASSERT_EQ(RunLocalFuzzInput(bytes.data(), bytes.size()), "")
        << "random input #" << i;
  }
  std::printf("random: %d inputs, %lld operations\n", kInputs,
              static_cast<long long>(LocalFuzzOpsExecuted() - ops_before));
  // One opcode in sixteen is a race: the random inputs must reach them.
  EXPECT_GT(LocalFuzzRacesExecuted() - races_before, 100);
}

}  // namespace
