#include "tickwheel/timer/manual_clock.h"

#include <algorithm>

namespace tickwheel {

class ManualClock::ManualSleeper final : public Clock::Sleeper {
 public:
  explicit ManualSleeper(ManualClock* clock) : clock_(clock) {
    internal::MutexLock lock(&clock_->mu_);
    clock_->sleepers_.push_back(&state_);
    clock_->cv_.notify_all();
  }

  ~ManualSleeper() override {
    internal::MutexLock lock(&clock_->mu_);
    auto& v = clock_->sleepers_;
    v.erase(std::find(v.begin(), v.end(), &state_));
    clock_->cv_.notify_all();
  }

  void SleepUntil(int64_t deadline_nanos)
      ABSL_LOCKS_EXCLUDED(clock_->mu_) override {
    internal::MutexLock lock(&clock_->mu_);
    state_.deadline = deadline_nanos;
    state_.asleep = true;
    clock_->cv_.notify_all();  // AwaitIdle() may be waiting for this.
    clock_->cv_.wait(clock_->mu_,
                     [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(clock_->mu_) {
                       return state_.woken || (deadline_nanos != INT64_MAX &&
                                               clock_->now_ >= deadline_nanos);
                     });
    state_.asleep = false;
    state_.woken = false;
  }

  void Wake() ABSL_LOCKS_EXCLUDED(clock_->mu_) override {
    internal::MutexLock lock(&clock_->mu_);
    state_.woken = true;
    clock_->cv_.notify_all();
  }

 private:
  ManualClock* const clock_;
  SleeperState state_ ABSL_GUARDED_BY(clock_->mu_);
};

ManualClock::ManualClock(int64_t start_nanos) : now_(start_nanos) {}

ManualClock::~ManualClock() = default;

int64_t ManualClock::NowNanos() {
  internal::MutexLock lock(&mu_);
  return now_;
}

std::unique_ptr<Clock::Sleeper> ManualClock::NewSleeper() {
  return std::make_unique<ManualSleeper>(this);
}

void ManualClock::Advance(absl::Duration d) {
  const int64_t nanos = std::max<int64_t>(0, absl::ToInt64Nanoseconds(d));
  internal::MutexLock lock(&mu_);
  now_ = (now_ > INT64_MAX - nanos) ? INT64_MAX : now_ + nanos;
  cv_.notify_all();
}

bool ManualClock::IdleLocked() const {
  for (const SleeperState* s : sleepers_) {
    if (!s->asleep || s->woken) return false;
    if (s->deadline != INT64_MAX && s->deadline <= now_) return false;
  }
  return true;
}

void ManualClock::AwaitIdle() {
  internal::MutexLock lock(&mu_);
  cv_.wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return IdleLocked();
  });
}

void ManualClock::AdvanceAndSettle(absl::Duration d) {
  Advance(d);
  AwaitIdle();
}

void ManualClock::AdvanceInSteps(absl::Duration total, absl::Duration step) {
  if (step <= absl::ZeroDuration()) step = total;
  AwaitIdle();
  for (absl::Duration done; done < total; done += step) {
    AdvanceAndSettle(std::min(step, total - done));
  }
}

int ManualClock::SleeperCount() {
  internal::MutexLock lock(&mu_);
  return static_cast<int>(sleepers_.size());
}

}  // namespace tickwheel
