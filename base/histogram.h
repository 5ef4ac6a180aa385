// base/histogram.h
// -----------------------------------------------------------------------------
// Internal. The bucket scheme of tickwheel's lateness histogram, shared by the
// engine, which counts into it, and the public LatenessHistogram
// (timer/metrics.h), which answers percentiles from it.
//
// Log-linear buckets over non-negative int64 values (nanoseconds): bucket 0
// holds 0; a value v >= 1 with bit width w (2^(w-1) <= v < 2^w) goes to one
// of kSubBuckets equal slices of [2^(w-1), 2^w). So a bucket is at most
// 1/kSubBuckets of its values wide (12.5%), and all of int64 takes
// kBuckets counters (4 KiB of int64).
//
// Below 2^kSubBucketBits a bit width has fewer values than sub-buckets, so
// some small buckets share their lowest value with the one before and never
// receive a value. The reachable buckets ("distinct" below: each starts
// above the one before) partition [0, INT64_MAX] in increasing order; they
// are what the public LatenessHistogram shows.
//
// Thread-safety: pure functions, and HistogramCounts, whose counters one
// thread writes (relaxed stores, in groups) while others read (relaxed
// loads).

#ifndef TICKWHEEL_BASE_HISTOGRAM_H_
#define TICKWHEEL_BASE_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace tickwheel::internal {

inline constexpr int kSubBucketBits = 3;
inline constexpr int kSubBuckets = 1 << kSubBucketBits;
// Bucket 0, then kSubBuckets per bit width 1..63.
inline constexpr int kHistogramBuckets = 1 + 63 * kSubBuckets;

// The bucket of `v` (negative values count as 0).
constexpr int HistogramBucket(int64_t v) {
  if (v >= kSubBuckets) [[likely]] {
    // Every value a clock can tell apart from zero: the top bit's position
    // and the kSubBucketBits bits below it (a shift right). The general
    // form below gives the same; this one has no branch on the shift.
    const auto u = static_cast<uint64_t>(v);
    const int top = 63 - std::countl_zero(u);  // >= kSubBucketBits
    return 1 + top * kSubBuckets +
           static_cast<int>((u >> (top - kSubBucketBits)) & (kSubBuckets - 1));
  }
  if (v <= 0) return 0;
  const auto u = static_cast<uint64_t>(v);
  const int width = std::bit_width(u);  // 1..63
  // The kSubBucketBits bits below the leading one (fewer for small values,
  // which then use the low sub-buckets exactly).
  const int shift = width - 1 - kSubBucketBits;
  const uint64_t sub = shift >= 0 ? (u >> shift) & (kSubBuckets - 1)
                                  : (u << -shift) & (kSubBuckets - 1);
  return 1 + (width - 1) * kSubBuckets + static_cast<int>(sub);
}

// The smallest value of bucket `b`.
constexpr int64_t HistogramBucketLow(int b) {
  if (b <= 0) return 0;
  const int width = 1 + (b - 1) / kSubBuckets;
  const uint64_t sub = static_cast<uint64_t>((b - 1) % kSubBuckets);
  const uint64_t top = uint64_t{1} << (width - 1);
  const int shift = width - 1 - kSubBucketBits;
  const uint64_t low = shift >= 0 ? top | sub << shift : top | sub >> -shift;
  return static_cast<int64_t>(low);
}

static_assert(HistogramBucket(0) == 0 && HistogramBucket(1) == 1);
static_assert(HistogramBucketLow(HistogramBucket(1000)) <= 1000);
static_assert(HistogramBucket(INT64_MAX) == kHistogramBuckets - 1);

// Whether bucket `b` can hold a value: it starts above the bucket before.
constexpr bool HistogramBucketReachable(int b) {
  return b == 0 || HistogramBucketLow(b) > HistogramBucketLow(b - 1);
}

// How many buckets can hold a value.
inline constexpr int kHistogramDistinctBuckets = [] {
  int n = 0;
  for (int b = 0; b < kHistogramBuckets; ++b) n += HistogramBucketReachable(b);
  return n;
}();

// The bucket index of each reachable bucket, in increasing order: entry i is
// the i-th distinct bucket.
inline constexpr std::array<int16_t, kHistogramDistinctBuckets>
    kHistogramDistinct = [] {
      std::array<int16_t, kHistogramDistinctBuckets> t{};
      int n = 0;
      for (int b = 0; b < kHistogramBuckets; ++b) {
        if (HistogramBucketReachable(b)) t[n++] = static_cast<int16_t>(b);
      }
      return t;
    }();

// Every reachable bucket is where its own lowest value goes, so values map
// onto reachable buckets only and the distinct buckets cover every value.
static_assert([] {
  for (int b = 0; b < kHistogramBuckets; ++b) {
    if (HistogramBucketReachable(b) &&
        HistogramBucket(HistogramBucketLow(b)) != b) {
      return false;
    }
  }
  return true;
}());

// `a + b` for non-negative values, saturating at INT64_MAX.
constexpr int64_t HistogramSaturatingAdd(int64_t a, int64_t b) {
  return b > INT64_MAX - a ? INT64_MAX : a + b;
}

// The counters of one histogram: written by one thread, read by any.
//
// The writer records into an open group: the values of one bucket, their
// number, sum and max, in the writer's own fields. Publish() adds the group
// to the shared counters; so does the next Record() whose value falls in
// another bucket, or that finds the group full (kGroupCap values). So a
// reader sees every value once it is published, and until then is at most
// kGroupCap values behind; the writer publishes whenever it stops
// recording for a while (a Timer's worker at the end of each pass).
// Grouping is what keeps a run of nearly equal values (a burst of timeouts
// due together) at a compare, a decrement, an add and a max each.
struct HistogramCounts {
  static constexpr int64_t kGroupCap = 64;

  std::array<std::atomic<int64_t>, kHistogramBuckets> counts{};
  std::atomic<int64_t> max{0};
  // The sum of every value published, saturating at INT64_MAX.
  std::atomic<int64_t> sum{0};
  // The number of values published: the sum of `counts`, kept as one word
  // so that a reader of the total loads one counter.
  std::atomic<int64_t> count{0};

  // Single writer. Inline: a timer records every run. A value outside the
  // open group, or a full group, takes RecordSlow().
  [[gnu::always_inline]] void Record(int64_t v) {
    if (!FitsOpenGroup(v)) [[unlikely]] {
      RecordSlow(v);
      return;
    }
    AddToOpenGroup(v);
  }

  // Single writer: adds the open group to the shared counters (relaxed
  // stores, no read-modify-write) and empties it. Cheap when it is empty.
  void Publish() {
    if (room_ != cap_) PublishGroup();
  }

 private:
  // Whether v joins the open group: in its range and with room. One
  // unsigned compare tests both ends of the range: v - low_ wraps around for
  // any v below low_ (a negative v too, since low_ >= 0), so it exceeds
  // span_.
  bool FitsOpenGroup(int64_t v) const {
    return static_cast<uint64_t>(v) - static_cast<uint64_t>(low_) <= span_ &&
           room_ != 0;
  }
  // The open group takes v (cannot overflow: see Reopen()).
  void AddToOpenGroup(int64_t v) {
    --room_;
    group_sum_ += v;
    if (v > group_max_) group_max_ = v;
  }
  // Record() of a value outside the open group (a negative one counts as
  // 0), or into a full group.
  [[gnu::noinline]] void RecordSlow(int64_t v) {
    if (v < 0) v = 0;
    if (!FitsOpenGroup(v)) Reopen(v);
    AddToOpenGroup(v);
  }
  // Publishes the open group, then opens one for v's bucket: all of its
  // values from 2^kSubBucketBits up, where every bucket is reachable;
  // below, v alone (a few buckets there hold no value, so the next one's
  // low end is no bound). The group's capacity keeps its sum within int64:
  // kGroupCap values of the bucket's largest, or one value when those could
  // overflow (a lateness of centuries).
  void Reopen(int64_t v) {
    Publish();
    bucket_ = HistogramBucket(v);
    int64_t high;
    if (v < kSubBuckets) {
      low_ = high = v;
    } else {
      low_ = HistogramBucketLow(bucket_);
      high = bucket_ + 1 < kHistogramBuckets
                 ? HistogramBucketLow(bucket_ + 1) - 1
                 : INT64_MAX;
    }
    span_ = static_cast<uint64_t>(high - low_);
    cap_ = high <= INT64_MAX / kGroupCap ? kGroupCap : 1;
    room_ = cap_;
  }
  [[gnu::noinline]] void PublishGroup() {
    const int64_t n = cap_ - room_;
    std::atomic<int64_t>& c = counts[bucket_];
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    count.store(count.load(std::memory_order_relaxed) + n,
                std::memory_order_relaxed);
    sum.store(
        HistogramSaturatingAdd(sum.load(std::memory_order_relaxed), group_sum_),
        std::memory_order_relaxed);
    if (group_max_ > max.load(std::memory_order_relaxed)) {
      max.store(group_max_, std::memory_order_relaxed);
    }
    room_ = cap_;
    group_sum_ = 0;
    group_max_ = 0;
  }

  // The writer's own: the open group's bucket and the values it holds,
  // [low_, low_ + span_] (none before the first value: room_ is 0 then, so
  // that the first Record() opens a group), how many more values it takes
  // of the cap_ it opened with, and the sum and max of those it has.
  int bucket_ = 0;
  int64_t low_ = 0;
  uint64_t span_ = 0;
  int64_t cap_ = 0;
  int64_t room_ = 0;
  int64_t group_sum_ = 0;
  int64_t group_max_ = 0;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_HISTOGRAM_H_
