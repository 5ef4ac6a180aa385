#include "tickwheel/durable/redis_clock.h"

#include <cstdint>

namespace tickwheel::durable::internal {
namespace {

// a * 1000 + b, saturating at the int64 range: times near the ends of the
// range (a deadline clamped to 2^53 us, say) must not wrap.
int64_t Scaled(int64_t us, int64_t plus) {
  int64_t ns;
  if (__builtin_mul_overflow(us, int64_t{1000}, &ns)) {
    return us > 0 ? INT64_MAX : INT64_MIN;
  }
  int64_t out;
  if (__builtin_add_overflow(ns, plus, &out)) {
    return plus > 0 ? INT64_MAX : INT64_MIN;
  }
  return out;
}

int64_t Sum(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

}  // namespace

void RedisClock::Observe(int64_t redis_us, int64_t before_nanos,
                         int64_t after_nanos) {
  if (after_nanos < before_nanos) return;
  const int64_t r = redis_us * 1000;
  const int64_t low = r - after_nanos;
  const int64_t high = r - before_nanos;
  const bool narrower = high - low <= high_offset_ - low_offset_;
  if (!known_ || narrower || after_nanos - taken_at_ > kMaxSampleAgeNanos) {
    known_ = true;
    low_offset_ = low;
    high_offset_ = high;
    taken_at_ = after_nanos;
  }
}

int64_t RedisClock::AtLeastMicros(int64_t local_nanos) const {
  return Sum(local_nanos, low_offset_) / 1000;
}

int64_t RedisClock::AtMostMicros(int64_t local_nanos) const {
  return Sum(Sum(local_nanos, high_offset_), 999) / 1000;
}

int64_t RedisClock::EstimateMicros(int64_t local_nanos) const {
  return Sum(local_nanos, low_offset_ + (high_offset_ - low_offset_) / 2) /
         1000;
}

int64_t RedisClock::LocalWhenSurely(int64_t redis_us) const {
  return Scaled(redis_us, -low_offset_);
}

int64_t RedisClock::LocalWhenPossibly(int64_t redis_us) const {
  return Scaled(redis_us, -high_offset_);
}

}  // namespace tickwheel::durable::internal
