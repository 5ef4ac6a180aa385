#include "tickwheel/timer/clock.h"

#include <chrono>
#include <condition_variable>

#include "tickwheel/base/mutex.h"

namespace tickwheel {
namespace {

class RealSleeper final : public Clock::Sleeper {
 public:
  void SleepUntil(int64_t deadline_nanos) ABSL_LOCKS_EXCLUDED(mu_) override {
    const auto deadline = std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(deadline_nanos));
    internal::MutexLock lock(&mu_);
    cv_.wait_until(mu_, deadline, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return woken_;
    });
    woken_ = false;
  }

  void Wake() ABSL_LOCKS_EXCLUDED(mu_) override {
    {
      internal::MutexLock lock(&mu_);
      woken_ = true;
    }
    cv_.notify_one();
  }

 private:
  internal::Mutex mu_;
  std::condition_variable_any cv_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<Clock::Sleeper> RealClock::NewSleeper() {
  return std::make_unique<RealSleeper>();
}

std::shared_ptr<Clock> RealClock::Shared() {
  static const auto* const kClock =
      new std::shared_ptr<Clock>(std::make_shared<RealClock>());
  return *kClock;
}

}  // namespace tickwheel
