// tests/lateness_buckets_test.cc
// -----------------------------------------------------------------------------
// The engine's lateness counts (base/histogram.h, HistogramCounts): each value
// Record()ed lands in HistogramBucket()'s bucket for it, in whatever order
// values come (Record() keeps an open group of one bucket's values, and must
// close it at every bucket edge), the sum, max and count add up, and a
// reader is never more than a group's capacity behind the writer.

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tickwheel/base/histogram.h"

namespace tickwheel::internal {
namespace {

// Records `values` and checks every bucket against a count made bucket by
// bucket with HistogramBucket().
void ExpectCountsOf(const std::vector<int64_t>& values) {
  HistogramCounts h;
  std::map<int, int64_t> want;
  int64_t max = 0;
  for (int64_t v : values) {
    h.Record(v);
    ++want[HistogramBucket(v)];
    if (v > max) max = v;
  }
  h.Publish();
  EXPECT_EQ(h.count.load(), static_cast<int64_t>(values.size()));
  for (int b = 0; b < kHistogramBuckets; ++b) {
    const auto it = want.find(b);
    EXPECT_EQ(h.counts[b].load(), it == want.end() ? 0 : it->second)
        << "bucket " << b;
  }
  EXPECT_EQ(h.max.load(), max);
}

TEST(LatenessBucketsTest, EachValueLandsInItsBucketAcrossEveryEdge) {
  // Both sides of every reachable bucket's low end, in rising order and in
  // falling order, so that each comes right after a value of another bucket.
  std::vector<int64_t> edges;
  for (int b = 1; b < kHistogramBuckets; ++b) {
    if (!HistogramBucketReachable(b)) continue;
    const int64_t low = HistogramBucketLow(b);
    edges.push_back(low - 1);
    edges.push_back(low);
  }
  edges.push_back(INT64_MAX);
  ExpectCountsOf(edges);
  ExpectCountsOf(std::vector<int64_t>(edges.rbegin(), edges.rend()));
}

TEST(LatenessBucketsTest, RunsOfNearlyEqualValuesAndJumpsBetweenThem) {
  // What a burst records: long runs within one bucket, a step to the next
  // slice's clock reading, now and then a value far away (and back).
  std::mt19937_64 rng(42);
  std::vector<int64_t> values;
  int64_t base = 250'000;
  for (int slice = 0; slice < 64; ++slice) {
    for (int i = 0; i < 100; ++i) {
      values.push_back(base + static_cast<int64_t>(rng() % 40));
    }
    values.push_back(static_cast<int64_t>(rng() % 16));  // a small one
    values.push_back(-5);                                // counts as zero
    base += 60'000;
  }
  ExpectCountsOf(values);
}

TEST(LatenessBucketsTest, SumAddsEveryValueAndSaturates) {
  HistogramCounts h;
  h.Record(7);
  h.Record(-3);  // counts as zero, in the sum too
  h.Record(1000);
  h.Publish();
  EXPECT_EQ(h.sum.load(), 1007);
  h.Record(INT64_MAX - 10);
  h.Record(INT64_MAX - 11);  // one group each: two would overflow its sum
  h.Record(1000);
  h.Publish();
  EXPECT_EQ(h.sum.load(), INT64_MAX);
  EXPECT_EQ(h.max.load(), INT64_MAX - 10);
  int64_t total = 0;
  for (const auto& c : h.counts) total += c.load();
  EXPECT_EQ(total, 6);
  EXPECT_EQ(h.count.load(), 6);
}

TEST(LatenessBucketsTest, AReaderTrailsByAtMostOneGroup) {
  // One bucket's values, more than a group holds: what is published trails
  // what is recorded by at most kGroupCap, and all of it is there after
  // Publish().
  HistogramCounts h;
  const int64_t b = HistogramBucket(1'000'000);
  int64_t sum = 0;
  for (int64_t i = 1; i <= 5 * HistogramCounts::kGroupCap + 3; ++i) {
    h.Record(1'000'000 + i % 7);
    sum += 1'000'000 + i % 7;
    EXPECT_GE(h.count.load(), i - HistogramCounts::kGroupCap) << i;
    EXPECT_LE(h.count.load(), i);
    EXPECT_EQ(h.counts[b].load(), h.count.load());
  }
  h.Publish();
  EXPECT_EQ(h.count.load(), 5 * HistogramCounts::kGroupCap + 3);
  EXPECT_EQ(h.counts[b].load(), h.count.load());
  EXPECT_EQ(h.sum.load(), sum);
  EXPECT_EQ(h.max.load(), 1'000'006);
  h.Publish();  // nothing open: nothing changes
  EXPECT_EQ(h.count.load(), 5 * HistogramCounts::kGroupCap + 3);
  EXPECT_EQ(h.sum.load(), sum);
}

TEST(LatenessBucketsTest, AValueOfAnotherBucketPublishesTheGroupBeforeIt) {
  HistogramCounts h;
  h.Record(5000);
  h.Record(5001);
  EXPECT_EQ(h.count.load(), 0);  // open
  h.Record(90'000);              // another bucket: the first two go out
  EXPECT_EQ(h.count.load(), 2);
  EXPECT_EQ(h.counts[HistogramBucket(5000)].load(), 2);
  EXPECT_EQ(h.sum.load(), 10001);
  EXPECT_EQ(h.max.load(), 5001);
  h.Publish();
  EXPECT_EQ(h.count.load(), 3);
  EXPECT_EQ(h.max.load(), 90'000);
}

}  // namespace
}  // namespace tickwheel::internal
