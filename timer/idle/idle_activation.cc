#include "tickwheel/timer/idle/idle_activation.h"

#include <chrono>
#include <condition_variable>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace tickwheel::internal {

IdleActivation::IdleActivation(std::shared_ptr<IdleContext> context,
                               std::shared_ptr<Clock> clock,
                               std::shared_ptr<Timer> shared_timer)
    : context_(std::move(context)),
      refresher_(std::make_shared<IdleRefresher>(context_)),
      last_metrics_(std::make_shared<LastMetrics>()),
      on_shared_timer_(shared_timer != nullptr),
      clock_(std::move(clock)),
      shared_timer_(std::move(shared_timer)) {}

int64_t IdleActivation::NowNanos() const {
  if (clock_ != nullptr) return clock_->NowNanos();
  return std::chrono::nanoseconds(shared_timer_->now().time_since_epoch())
      .count();
}

absl::StatusOr<Timer*> IdleActivation::Start(int64_t now) {
  std::unique_ptr<Timer> owned;
  Timer* timer = shared_timer_.get();
  if (timer == nullptr) {
    const IdleConfig& config = context_->config();
    TimerOptions options;
    options.tick_duration = config.tick_duration;
    options.ticks_per_wheel = config.ticks_per_wheel;
    options.thread_name = config.thread_name;
    options.clock = clock_;
    // No task_executor on the Timer: checks are bookkeeping and run on the
    // worker; only on_idle goes to the tracker's executor.
    absl::StatusOr<std::unique_ptr<Timer>> created = Timer::Create(options);
    if (!created.ok()) return created.status();
    owned = *std::move(created);
    timer = owned.get();
  }
  if (absl::Status s = refresher_->Start(*timer, now); !s.ok()) return s;
  owned_timer_ = std::move(owned);
  timer_ = timer;
  return timer;
}

void IdleActivation::Registered(int64_t now) {
  // An error leaves the refresh paused, for the next registration to retry;
  // the registration itself is then dormant too (its arm was refused).
  if (timer_ != nullptr) (void)refresher_->Resume(now);
}

IdleActivation::Ending IdleActivation::End() {
  refresher_->End();
  timer_ = nullptr;
  Ending ending(context_, last_metrics_);
  ending.timer_ = std::move(owned_timer_);
  return ending;
}

IdleActivation::Ending IdleActivation::Release() {
  Ending ending = End();
  ending.released_timer_ = std::move(shared_timer_);
  ending.released_clock_ = std::move(clock_);
  return ending;
}

TimerMetrics IdleActivation::Metrics() const {
  if (timer_ != nullptr) return timer_->metrics();
  if (shared_timer_ != nullptr) return shared_timer_->metrics();
  MutexLock lock(&last_metrics_->mu);
  return last_metrics_->value;
}

absl::Status IdleActivation::Ending::Finish() && {
  struct Done {
    Mutex mu;
    std::condition_variable_any cv;
    bool done ABSL_GUARDED_BY(mu) = false;
  };
  auto done = std::make_shared<Done>();
  std::thread stopper([context = context_, last = last_metrics_,
                       timer = std::move(timer_), done]() mutable {
    if (timer != nullptr) {
      // Every timeout on it is a library timeout: stop() destroys their
      // tasks unrun and returns none. The entries stay kArmed (registered,
      // dormant) for the next activation.
      (void)timer->stop();
      {
        MutexLock lock(&last->mu);
        last->value = timer->metrics();
      }
      timer.reset();
    }
    context->AwaitCallbacks();
    MutexLock lock(&done->mu);
    done->done = true;
    done->cv.notify_all();
  });
  if (context_->InCallback()) {
    // Called from one of our own callbacks: the stop needs this callback to
    // return first, so it finishes in the background.
    stopper.detach();
    return absl::OkStatus();
  }
  const absl::Duration drain = context_->config().drain_timeout;
  bool finished;
  {
    MutexLock lock(&done->mu);
    finished = done->cv.wait_for(
        done->mu, absl::ToChronoNanoseconds(drain),
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(done->mu) { return done->done; });
  }
  if (finished) {
    stopper.join();
    return absl::OkStatus();
  }
  stopper.detach();
  return absl::DeadlineExceededError(fmt::format(
      "idle tracker: callbacks still running after the drain timeout ({}); "
      "the timer finishes stopping in the background",
      absl::FormatDuration(drain)));
}

}  // namespace tickwheel::internal
