#include "tickwheel/durable/redis_clock.h"

namespace tickwheel::durable::internal {

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
  return (local_nanos + low_offset_) / 1000;
}

int64_t RedisClock::AtMostMicros(int64_t local_nanos) const {
  return (local_nanos + high_offset_ + 999) / 1000;
}

int64_t RedisClock::EstimateMicros(int64_t local_nanos) const {
  return (local_nanos + low_offset_ + (high_offset_ - low_offset_) / 2) / 1000;
}

int64_t RedisClock::LocalWhenSurely(int64_t redis_us) const {
  return redis_us * 1000 - low_offset_;
}

int64_t RedisClock::LocalWhenPossibly(int64_t redis_us) const {
  return redis_us * 1000 - high_offset_;
}

}  // namespace tickwheel::durable::internal
