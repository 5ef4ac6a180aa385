#include "tickwheel/timer/idle/idle_refresher.h"

#include <chrono>
#include <utility>

#include "tickwheel/timer/internal/library_timeouts.h"

namespace tickwheel::internal {

// The task of one run. Holds the refresher: on an application's Timer a
// pending run may outlive the tracker until End() cancels it.
class IdleRefresher::Run {
 public:
  Run(std::shared_ptr<IdleRefresher> refresher, uint64_t generation)
      : refresher_(std::move(refresher)), generation_(generation) {}
  void operator()(const Timeout& timeout) {
    refresher_->OnRun(timeout.timer(), generation_);
  }

 private:
  std::shared_ptr<IdleRefresher> refresher_;
  uint64_t generation_;
};

IdleRefresher::IdleRefresher(std::shared_ptr<IdleContext> context)
    : context_(std::move(context)) {}

absl::Status IdleRefresher::Start(Timer& timer, int64_t now) {
  context_->RestartCoarse(now);
  uint64_t generation;
  {
    IdleSpinLockGuard l(&lock_);
    generation = ++generation_;
    timer_ = &timer;
    paused_ = context_->counters().tracked.load(std::memory_order_relaxed) == 0;
    if (paused_) return absl::OkStatus();
  }
  absl::Status s = Schedule(timer, generation);
  if (!s.ok()) End();
  return s;
}

absl::Status IdleRefresher::Resume(int64_t now) {
  uint64_t generation;
  Timer* timer;
  {
    IdleSpinLockGuard l(&lock_);
    if (!paused_ || timer_ == nullptr) return absl::OkStatus();
    paused_ = false;
    generation = generation_;
    timer = timer_;
  }
  // The registration is handed back only after this: no touch() of it can
  // read the stale ceiling.
  context_->RestartCoarse(now);
  return Schedule(*timer, generation);
}

void IdleRefresher::End() {
  Timeout pending;
  {
    IdleSpinLockGuard l(&lock_);
    ++generation_;
    timer_ = nullptr;
    paused_ = true;
    pending = std::exchange(pending_, Timeout());
  }
  pending.cancel();  // destroys the run's task, unlocked
}

absl::Status IdleRefresher::Schedule(Timer& timer, uint64_t generation) {
  const IdleConfig& config = context_->config();
  absl::StatusOr<Timeout> next = LibraryTimeouts::NewTimeout(
      timer, Run(shared_from_this(), generation),
      absl::Nanoseconds(config.refresh_nanos) - config.tick_duration);
  Timeout stale;  // cancelled with no lock held
  {
    IdleSpinLockGuard l(&lock_);
    if (!next.ok()) {
      if (generation_ == generation) {
        paused_ = true;
        pending_ = Timeout();
      }
      return next.status();
    }
    if (generation_ == generation) {
      pending_ = *std::move(next);
    } else {
      stale = *std::move(next);  // the activation ended meanwhile
    }
  }
  stale.cancel();
  return absl::OkStatus();
}

void IdleRefresher::OnRun(Timer* timer, uint64_t generation) {
  // Null only when an application's Timer runs its tasks on an executor and
  // has begun its destruction, which can only follow the tracker's Close().
  if (timer == nullptr) return;
  {
    IdleSpinLockGuard l(&lock_);
    if (generation_ != generation) return;  // that activation has ended
    if (context_->counters().tracked.load(std::memory_order_relaxed) == 0) {
      paused_ = true;  // nothing to refresh for until the next registration
      pending_ = Timeout();
      return;
    }
  }
  context_->RefreshCoarse(
      std::chrono::nanoseconds(timer->now().time_since_epoch()).count());
  IdleCounters::Add(context_->counters().refreshes);
  (void)Schedule(*timer, generation);  // an error pauses the refresh
}

}  // namespace tickwheel::internal
