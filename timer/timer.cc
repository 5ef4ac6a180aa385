#include "timer/timer.h"

#include <new>
#include <utility>

#include <fmt/format.h>

#include "timer/wheel.h"
#include "worker/worker.h"

namespace tickwheel {

Timer::Timer(absl::Duration tick, int ticks_per_wheel)
    : tick_duration_(tick), ticks_per_wheel_(ticks_per_wheel) {}

absl::StatusOr<std::unique_ptr<Timer>> Timer::Create(TimerOptions options) {
  if (options.tick_duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("tick_duration must be > 0, got {}",
                    absl::FormatDuration(options.tick_duration)));
  }
  if (options.tick_duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("tick_duration must be finite");
  }
  const int64_t tick_nanos = absl::ToInt64Nanoseconds(options.tick_duration);
  if (tick_nanos < 1) {
    return absl::InvalidArgumentError(
        fmt::format("tick_duration must be at least 1ns, got {}",
                    absl::FormatDuration(options.tick_duration)));
  }
  if (options.ticks_per_wheel <= 0 ||
      options.ticks_per_wheel > internal::Wheel::kMaxTicksPerWheel) {
    return absl::InvalidArgumentError(fmt::format(
        "ticks_per_wheel must be in [1, 2^30], got {}", options.ticks_per_wheel));
  }
  const int wheel = internal::Wheel::NormalizeTicksPerWheel(options.ticks_per_wheel);
  if (tick_nanos > INT64_MAX / wheel) {
    return absl::InvalidArgumentError(fmt::format(
        "tick_duration ({}) * ticks_per_wheel ({}, rounded up from {}) "
        "overflows int64 nanoseconds; use a shorter tick or a smaller wheel",
        absl::FormatDuration(options.tick_duration), wheel,
        options.ticks_per_wheel));
  }
  if (absl::Status s = internal::AcquireInstanceSlot(); !s.ok()) return s;

  std::unique_ptr<Timer> timer(new Timer(absl::Nanoseconds(tick_nanos), wheel));
  internal::WorkerConfig config;
  config.tick_nanos = tick_nanos;
  config.ticks_per_wheel = wheel;
  config.max_pending_timeouts = options.max_pending_timeouts;
  config.thread_name = std::move(options.thread_name);
  config.task_executor = std::move(options.task_executor);
  config.clock = options.clock ? std::move(options.clock) : RealClock::Shared();
  try {
    timer->worker_ =
        std::make_shared<internal::Worker>(std::move(config), timer.get());
  } catch (const std::bad_alloc&) {
    internal::ReleaseInstanceSlot();
    timer->counted_ = false;
    return absl::ResourceExhaustedError(fmt::format(
        "not enough memory for a wheel of {} buckets", wheel));
  }
  return timer;
}

Timer::~Timer() {
  if (worker_ != nullptr) worker_->Shutdown();
  if (counted_.exchange(false)) internal::ReleaseInstanceSlot();
}

absl::StatusOr<Timeout> Timer::newTimeout(TimerTask task,
                                          absl::Duration delay) {
  if (!task) return EmptyTaskError();
  return Schedule(&internal::EmplaceTask<TimerTask&&>, &task, delay);
}

absl::StatusOr<Timeout> Timer::Schedule(internal::TaskEmplacer emplace,
                                        void* callable, absl::Duration delay) {
  return worker_->Schedule(emplace, callable, delay);
}

absl::Status Timer::EmptyTaskError() {
  return absl::InvalidArgumentError(
      "newTimeout: the task is empty; pass a callable");
}

absl::StatusOr<std::vector<Timeout>> Timer::stop() {
  absl::StatusOr<std::vector<Timeout>> result = worker_->Stop();
  if (result.ok() && counted_.exchange(false)) internal::ReleaseInstanceSlot();
  return result;
}

int64_t Timer::pendingTimeouts() const { return worker_->pending(); }

TimerMetrics Timer::metrics() const { return worker_->Metrics(); }

}  // namespace tickwheel
