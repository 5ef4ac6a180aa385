// tests/lateness_test.cc
// -----------------------------------------------------------------------------
// metrics().lateness: the distribution of (start of a run - its deadline)
// over every run, percentiles within a bucket's width, max, sum and bucket
// counts exact.

#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;

TEST(LatenessTest, EmptyUntilATaskRuns) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  const LatenessHistogram h = t.timer->metrics().lateness;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Percentile(0.5), absl::ZeroDuration());
  EXPECT_EQ(h.max(), absl::ZeroDuration());
}

TEST(LatenessTest, RecordsEveryRunAndItsLateness) {
  // A 10 ms tick: a task due 1 ms into a tick runs at the tick's end, 9 ms
  // late; one due at a tick boundary runs on time.
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(10)));
  for (int i = 0; i < 90; ++i) {
    t.timer->newTimeout([] {}, absl::Milliseconds(10)).value();  // on time
  }
  for (int i = 0; i < 10; ++i) {
    t.timer->newTimeout([] {}, absl::Milliseconds(11)).value();  // 9 ms late
  }
  t.timer->newPeriodic([] {}, absl::Milliseconds(1), absl::Milliseconds(10))
      .value();  // 9 ms late, every run
  t.clock->AdvanceInSteps(absl::Milliseconds(20), absl::Milliseconds(10));
  const LatenessHistogram h = t.timer->metrics().lateness;
  EXPECT_EQ(h.count(), 102);  // 100 one-shots, two periodic runs
  EXPECT_EQ(h.count(), t.timer->metrics().expired);
  EXPECT_EQ(h.Percentile(0.5), absl::ZeroDuration());
  EXPECT_EQ(h.Percentile(0.85), absl::ZeroDuration());
  // 9 ms, to within the bucket's 12.5%, never above the max.
  EXPECT_GE(h.Percentile(0.95), absl::Milliseconds(9) * 0.875);
  EXPECT_LE(h.Percentile(0.95), absl::Milliseconds(9));
  EXPECT_EQ(h.max(), absl::Milliseconds(9));
  EXPECT_EQ(h.Percentile(1.0), h.max());
  EXPECT_EQ(t.timer->metrics().worst_lateness, h.max());
  // The sum and the buckets an exporter reads: 12 runs 9 ms late, 90 on time.
  EXPECT_EQ(h.sum(), absl::Milliseconds(9) * 12);
  EXPECT_EQ(h.BucketCount(0), 90);
  EXPECT_EQ(
      h.BucketCount(LatenessHistogram::BucketIndex(absl::Milliseconds(9))), 12);
  EXPECT_NE(fmt::format("{}", h).find("n=102"), std::string::npos)
      << fmt::format("{}", h);
}

}  // namespace
}  // namespace tickwheel
