// worker/tick_divider.h
// -----------------------------------------------------------------------------
// Internal. TickDivider: the wheel's conversion of a deadline to a tick, a
// division by the tick's length, without a divide instruction.
//
// Thread-safety: immutable after construction.

#ifndef TICKWHEEL_WORKER_TICK_DIVIDER_H_
#define TICKWHEEL_WORKER_TICK_DIVIDER_H_

#include <cstdint>

namespace tickwheel::internal {

// Division of non-negative int64 values by a fixed positive divisor, without
// a divide instruction (the worker divides once per insertion, removal and
// cascade). With m = floor((2^64 - 1) / d), floor(n * m / 2^64) is floor(n /
// d) or up to two less, for every n < 2^64; at most two corrections fix it.
class TickDivider {
 public:
  explicit TickDivider(int64_t divisor)
      : d_(static_cast<uint64_t>(divisor)), m_(~uint64_t{0} / d_) {}

  // floor(n / d) and n % d, for n >= 0.
  int64_t Divide(int64_t n, int64_t* remainder) const {
    const uint64_t un = static_cast<uint64_t>(n);
    uint64_t q =
        static_cast<uint64_t>((static_cast<unsigned __int128>(un) * m_) >> 64);
    uint64_t r = un - q * d_;
    while (r >= d_) {
      ++q;
      r -= d_;
    }
    *remainder = static_cast<int64_t>(r);
    return static_cast<int64_t>(q);
  }

 private:
  uint64_t d_;
  uint64_t m_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_TICK_DIVIDER_H_
