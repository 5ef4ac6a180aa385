// tests/timer_fuzz_regression_test.cc
// -----------------------------------------------------------------------------
// Runs the fuzz target's LLVMFuzzerTestOneInput (tests/timer_fuzzer.cc) in the
// ordinary, gcc-built test suite, under every sanitizer config: every file of
// the committed corpus (tests/fuzz_corpus/), then fixed-seed random inputs.
// A difference between the real timer and the model aborts with a report.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/model/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::filesystem::path CorpusDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "tests/fuzz_corpus";
  return std::filesystem::path(srcdir) / workspace / "tests" / "fuzz_corpus";
}

void Replay(const std::string& name, const std::vector<uint8_t>& bytes) {
  // Printed first, so that an abort names the input.
  std::fprintf(stderr, "replaying %s (%zu bytes)\n", name.c_str(),
               bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

TEST(TimerFuzzRegressionTest, CommittedCorpus) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(CorpusDir())) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u) << "corpus missing under " << CorpusDir();
  const int64_t ops_before = tickwheel::model::FuzzOpsExecuted();
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    Replay(file.filename().string(), bytes);
  }
  std::printf(
      "corpus: %zu inputs, %lld operations\n", files.size(),
      static_cast<long long>(tickwheel::model::FuzzOpsExecuted() - ops_before));
}

TEST(TimerFuzzRegressionTest, FixedSeedRandomInputs) {
  std::mt19937 rng(20240401);
  const int64_t ops_before = tickwheel::model::FuzzOpsExecuted();
  constexpr int kInputs = 200;
  for (int i = 0; i < kInputs; ++i) {
    std::vector<uint8_t> bytes(2 + rng() % 160);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    Replay("random #" + std::to_string(i), bytes);
  }
  std::printf(
      "random: %d inputs, %lld operations\n", kInputs,
      static_cast<long long>(tickwheel::model::FuzzOpsExecuted() - ops_before));
  // One opcode byte in sixteen is a race: the random inputs must reach them.
  EXPECT_GT(tickwheel::model::FuzzRacesExecuted(), 100);
}

}  // namespace
