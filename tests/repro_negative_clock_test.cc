// tests/repro_negative_clock_test.cc
// -----------------------------------------------------------------------------
// Reproducers: clock readings below zero broke both ManualClock and the
// worker. Fixed in 68f7a48 (and e00db75); these now run in the default suite
// as part of //tests:fixed_repros_test.
//
// Clock's contract allows any origin ("only differences matter") and
// ManualClock's constructor takes "any value", but two saturating additions
// assume a non-negative left operand:
//
// 1. ManualClock::Advance(): `nanos > INT64_MAX - now_` overflows when now_ < 0
//    (UBSan: signed integer overflow); in practice the wrapped value is
//    negative, so the clock "saturates" and jumps to INT64_MAX.
// 2. Worker::AwaitTickEnd() sleeps until SaturatingAdd(start_nanos_, tick_end)
//    (worker/worker.cc), whose `b > INT64_MAX - a` overflows for a < 0: the
//    worker sleeps until INT64_MAX and no task ever runs. (With ManualClock the
//    two combine into a worker that spins forever.)
//
// Fix: with b >= 0 (true at every call site), test `a > INT64_MAX - b`, which
// cannot overflow; same in ManualClock::Advance (`now_ > INT64_MAX - nanos`).

#include <algorithm>
#include <atomic>
#include <memory>

#include <gtest/gtest.h>

#include "tickwheel/timer/timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace {

TEST(ReproNegativeClockTest, ManualClockAdvancesFromANegativeReading) {
  ManualClock clock(-1000);
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(clock.NowNanos(), -999);
}

// A ManualClock seen through a fixed negative offset, so that only the
// worker's arithmetic sees negative readings.
class OffsetClock final : public Clock {
 public:
  OffsetClock(std::shared_ptr<ManualClock> inner, int64_t offset)
      : inner_(std::move(inner)), offset_(offset) {}
  int64_t NowNanos() override { return inner_->NowNanos() + offset_; }
  std::unique_ptr<Sleeper> NewSleeper() override {
    return std::make_unique<OffsetSleeper>(inner_->NewSleeper(), offset_);
  }

 private:
  class OffsetSleeper final : public Sleeper {
   public:
    OffsetSleeper(std::unique_ptr<Sleeper> inner, int64_t offset)
        : inner_(std::move(inner)), offset_(offset) {}
    void SleepUntil(int64_t deadline) override {
      // offset_ < 0: deadline - offset_ only overflows upwards.
      inner_->SleepUntil(deadline > INT64_MAX + offset_ ? INT64_MAX
                                                        : deadline - offset_);
    }
    void Wake() override { inner_->Wake(); }

   private:
    std::unique_ptr<Sleeper> inner_;
    int64_t offset_;
  };

  std::shared_ptr<ManualClock> inner_;
  int64_t offset_;
};

TEST(ReproNegativeClockTest, TimerOnANegativeClockFires) {
  auto manual = std::make_shared<ManualClock>(0);
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  options.clock = std::make_shared<OffsetClock>(manual, -1000000000);
  auto timer = Timer::Create(options).value();
  std::atomic<int> ran{0};
  ASSERT_TRUE(timer->newTimeout([&](const Timeout&) { ran++; },
                                absl::Milliseconds(10)).ok());
  manual->AdvanceAndSettle(absl::Milliseconds(20));
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace tickwheel
