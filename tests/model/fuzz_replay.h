// tests/model/fuzz_replay.h
// -----------------------------------------------------------------------------
// What both fuzzers' regression tests (tests/timer_fuzz_regression_test.cc,
// tests/local_timer_fuzz_regression_test.cc) run through RunFuzzInput(), with
// gcc, in the ordinary suite and under every sanitizer config: every file of
// a committed corpus, then fixed-seed random inputs. A difference between the
// real timer and the model fails the test with the report.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_REPLAY_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_REPLAY_H_

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

namespace tickwheel::model {

// tests/<name> in Bazel's runfiles, or from the source root (CMake).
inline std::filesystem::path CorpusDir(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) {
    return std::filesystem::path("tests") / name;
  }
  return std::filesystem::path(srcdir) / workspace / "tests" / name;
}

// Replays every file of tests/<corpus>/ (at least `min_files` of them).
inline void ReplayCorpus(TimerKind kind, const std::string& corpus,
                         size_t min_files) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(CorpusDir(corpus))) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), min_files) << "corpus missing: " << corpus;
  const int64_t ops_before = FuzzOpsExecuted(kind);
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    EXPECT_EQ(RunFuzzInput(kind, bytes.data(), bytes.size()), "")
        << file.filename();
  }
  std::printf("corpus: %zu inputs, %lld operations\n", files.size(),
              static_cast<long long>(FuzzOpsExecuted(kind) - ops_before));
}

// Replays fixed-seed random inputs; one opcode in sixteen is a race, and the
// inputs must reach more than a hundred of them.
inline void ReplayRandomInputs(TimerKind kind) {
  std::mt19937 rng(20240401);
  const int64_t ops_before = FuzzOpsExecuted(kind);
  const int64_t races_before = FuzzRacesExecuted(kind);
  constexpr int kInputs = 200;
  for (int i = 0; i < kInputs; ++i) {
    std::vector<uint8_t> bytes(2 + rng() % 160);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    ASSERT_EQ(RunFuzzInput(kind, bytes.data(), bytes.size()), "")
        << "random input #" << i;
  }
  std::printf("random: %d inputs, %lld operations\n", kInputs,
              static_cast<long long>(FuzzOpsExecuted(kind) - ops_before));
  EXPECT_GT(FuzzRacesExecuted(kind) - races_before, 100);
}

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_REPLAY_H_
