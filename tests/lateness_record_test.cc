// tests/lateness_record_test.cc
// -----------------------------------------------------------------------------
// LatenessHistogram::Record(): what a client of the timer (durable/) records
// lands in the same buckets as a Timer's own runs, negative values count as
// zero, huge ones saturate, and percentiles stay within a bucket's width;
// the buckets an exporter reads partition the nanosecond range, and the sum
// adds every run.

#include <algorithm>
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

TEST(LatenessRecordTest, BucketsPartitionTheNanosecondRange) {
  EXPECT_EQ(LatenessHistogram::BucketUpperBound(0), absl::ZeroDuration());
  EXPECT_EQ(
      LatenessHistogram::BucketUpperBound(LatenessHistogram::kBuckets - 1),
      absl::Nanoseconds(INT64_MAX));
  for (int i = 1; i < LatenessHistogram::kBuckets; ++i) {
    const absl::Duration low = LatenessHistogram::BucketUpperBound(i - 1);
    const absl::Duration high = LatenessHistogram::BucketUpperBound(i);
    ASSERT_LT(low, high) << "bucket " << i;
    // Each bucket is at most 12.5% of its values wide (one value below 8 ns).
    EXPECT_LE(high - low, std::max(absl::Nanoseconds(1), high / 8))
        << "bucket " << i;
    // Its first and last value land in it, and the value after in the next.
    EXPECT_EQ(LatenessHistogram::BucketIndex(low + absl::Nanoseconds(1)), i);
    EXPECT_EQ(LatenessHistogram::BucketIndex(high), i);
    if (i + 1 < LatenessHistogram::kBuckets) {
      EXPECT_EQ(LatenessHistogram::BucketIndex(high + absl::Nanoseconds(1)),
                i + 1);
    }
  }
  // Out of range: clamped, as Record() clamps.
  EXPECT_EQ(LatenessHistogram::BucketUpperBound(-1), absl::ZeroDuration());
  EXPECT_EQ(LatenessHistogram::BucketUpperBound(LatenessHistogram::kBuckets),
            absl::Nanoseconds(INT64_MAX));
  EXPECT_EQ(LatenessHistogram::BucketIndex(absl::Seconds(-1)), 0);
  EXPECT_EQ(LatenessHistogram::BucketIndex(absl::InfiniteDuration()),
            LatenessHistogram::kBuckets - 1);
}

TEST(LatenessRecordTest, EachRunLandsInTheBucketThatHoldsIt) {
  LatenessHistogram h;
  h.Record(absl::ZeroDuration());
  h.Record(absl::Nanoseconds(7));
  h.Record(absl::Microseconds(300));
  h.Record(absl::Microseconds(300));
  h.Record(absl::Milliseconds(40));
  int64_t total = 0;
  for (int i = 0; i < LatenessHistogram::kBuckets; ++i) {
    total += h.BucketCount(i);
  }
  EXPECT_EQ(total, h.count());
  EXPECT_EQ(h.BucketCount(0), 1);
  EXPECT_EQ(h.BucketCount(LatenessHistogram::BucketIndex(absl::Nanoseconds(7))),
            1);
  EXPECT_EQ(
      h.BucketCount(LatenessHistogram::BucketIndex(absl::Microseconds(300))),
      2);
  EXPECT_EQ(
      h.BucketCount(LatenessHistogram::BucketIndex(absl::Milliseconds(40))), 1);
  EXPECT_EQ(h.BucketCount(-1), 0);
  EXPECT_EQ(h.BucketCount(LatenessHistogram::kBuckets), 0);
}

TEST(LatenessRecordTest, SumAddsEveryRunAndSaturates) {
  LatenessHistogram h;
  EXPECT_EQ(h.sum(), absl::ZeroDuration());
  h.Record(absl::Milliseconds(2));
  h.Record(absl::Microseconds(500));
  h.Record(absl::Milliseconds(-3));  // counts as zero, in the sum too
  EXPECT_EQ(h.sum(), absl::Microseconds(2500));
  h.Record(absl::InfiniteDuration());
  EXPECT_EQ(h.sum(), absl::Nanoseconds(INT64_MAX));
  h.Record(absl::Milliseconds(1));  // stays saturated
  EXPECT_EQ(h.sum(), absl::Nanoseconds(INT64_MAX));
  EXPECT_EQ(h.count(), 5);
}

}  // namespace
}  // namespace tickwheel
