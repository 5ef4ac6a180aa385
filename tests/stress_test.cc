// tests/stress_test.cc
// -----------------------------------------------------------------------------
// The random soak of the exactly-once invariant: rounds of producers,
// cancels, resets, periodic timeouts, rescheduling tasks and a racing
// stop() on a real-clock Timer, each checked task by task
// (tests/stress_round.h says what a round does and what it checks). The
// targeted races, one interleaving at a time, are
// races_on_shared_handles_test and races_with_producers_test.
//
// The default suite runs a few bounded rounds (about a second, a few seconds
// under TSan). The soak runs rounds until a time budget is spent:
//   TICKWHEEL_STRESS_SOAK_SECONDS=600 bazel test //tests:stress_soak_test
// (//tests:stress_soak_test is tagged manual and sets 120 s by default).

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/stress_round.h"

namespace tickwheel::stress {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

TEST(StressTest, ExactlyOnceUnderProducersCancelsAndStop) {
  StressCounts total;
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 12;
  for (uint32_t seed = 1; seed <= kRounds; ++seed) {
    const StressParams p = ParamsForSeed(seed, 4000);
    SCOPED_TRACE(fmt::format("seed {} executor {} max_pending {} stoppers {}",
                             seed, p.use_executor, p.max_pending, p.stoppers));
    total.Add(RunStressRound(p));
  }
  fmt::print("stress: {} rounds in {:.2f}s, {}\n", kRounds, SecondsSince(start),
             total.ToString());
  EXPECT_GT(total.ran, 0);
  EXPECT_GT(total.cancelled, 0);
  EXPECT_GT(total.periodic_runs, 0);
  EXPECT_GT(total.resets, 0);
  EXPECT_GT(total.by_cancel_all, 0);
}

TEST(StressTest, Soak) {
  const char* env = std::getenv("TICKWHEEL_STRESS_SOAK_SECONDS");
  if (env == nullptr || std::atoi(env) <= 0) {
    GTEST_SKIP() << "set TICKWHEEL_STRESS_SOAK_SECONDS to run the soak";
  }
  const auto budget = std::chrono::seconds(std::atoi(env));
  const auto start = std::chrono::steady_clock::now();
  StressCounts total;
  int rounds = 0;
  for (uint32_t seed = 1000; std::chrono::steady_clock::now() - start < budget;
       ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    total.Add(RunStressRound(ParamsForSeed(seed, 10000)));
    ++rounds;
    if (::testing::Test::HasFailure()) break;
  }
  fmt::print("soak: {} rounds in {:.1f}s, {}\n", rounds, SecondsSince(start),
             total.ToString());
}

}  // namespace
}  // namespace tickwheel::stress
