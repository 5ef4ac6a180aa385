#include "worker/clock.h"

#include <chrono>

namespace tickwheel {
namespace {

class RealSleeper final : public Clock::Sleeper {
 public:
  void SleepUntil(int64_t deadline_nanos) override {
    const auto deadline = std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(deadline_nanos));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return woken_; });
    woken_ = false;
  }

  void Wake() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      woken_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

int64_t RealClock::NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<Clock::Sleeper> RealClock::NewSleeper() {
  return std::make_unique<RealSleeper>();
}

std::shared_ptr<Clock> RealClock::Shared() {
  static const auto* const kClock =
      new std::shared_ptr<Clock>(std::make_shared<RealClock>());
  return *kClock;
}

}  // namespace tickwheel
