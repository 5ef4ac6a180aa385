// tests/lateness_record_test.cc
// -----------------------------------------------------------------------------
// LatenessHistogram::Record(): what a client of the timer (durable/) records
// lands in the same buckets as a Timer's own runs, negative values count as
// zero, huge ones saturate, and percentiles stay within a bucket's width.

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel {
namespace {

TEST(LatenessRecordTest, RecordedValuesAnswerPercentilesWithinABucket) {
  LatenessHistogram h;
  for (int i = 0; i < 90; ++i) h.Record(absl::Milliseconds(1));
  for (int i = 0; i < 10; ++i) h.Record(absl::Milliseconds(40));
  EXPECT_EQ(h.count(), 100);
  EXPECT_EQ(h.max(), absl::Milliseconds(40));
  EXPECT_GE(h.Percentile(0.5), absl::Milliseconds(1));
  EXPECT_LE(h.Percentile(0.5), absl::Milliseconds(1) * 1.125);
  EXPECT_GE(h.Percentile(0.99), absl::Milliseconds(40) * 0.875);
  EXPECT_LE(h.Percentile(0.99), absl::Milliseconds(40));
}

TEST(LatenessRecordTest, NegativeCountsAsZeroAndHugeSaturates) {
  LatenessHistogram h;
  h.Record(absl::Milliseconds(-5));
  EXPECT_EQ(h.count(), 1);
  EXPECT_EQ(h.max(), absl::ZeroDuration());
  EXPECT_EQ(h.Percentile(1.0), absl::ZeroDuration());
  h.Record(absl::InfiniteDuration());
  EXPECT_EQ(h.count(), 2);
  EXPECT_EQ(h.max(), absl::Nanoseconds(INT64_MAX));
}

TEST(LatenessRecordTest, ACopyIsASnapshot) {
  LatenessHistogram h;
  h.Record(absl::Microseconds(300));
  const LatenessHistogram copy = h;
  h.Record(absl::Microseconds(300));
  EXPECT_EQ(copy.count(), 1);
  EXPECT_EQ(h.count(), 2);
  EXPECT_NE(copy.ToString().find("n=1"), std::string::npos);
}

}  // namespace
}  // namespace tickwheel
