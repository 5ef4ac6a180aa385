#include "tickwheel/timer/timer.h"

#include <algorithm>
#include <memory>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/timer/internal/engine_bridge.h"
#include "tickwheel/worker/worker.h"

namespace tickwheel {

Timer::Timer(absl::Duration tick, int ticks_per_wheel, absl::Duration slack)
    : tick_duration_(tick), ticks_per_wheel_(ticks_per_wheel), slack_(slack) {}

absl::Status Timer::CheckOptions(const TimerOptions& options) {
  return internal::CheckShape(options.tick_duration, options.ticks_per_wheel,
                              options.slack)
      .status();
}

absl::StatusOr<std::unique_ptr<Timer>> Timer::Create(TimerOptions options) {
  absl::StatusOr<internal::CheckedShape> shape = internal::CheckShape(
      options.tick_duration, options.ticks_per_wheel, options.slack);
  if (!shape.ok()) return shape.status();
  const int64_t tick_nanos = shape->tick_nanos;
  const int wheel = shape->ticks_per_wheel;
  if (absl::Status s = internal::AcquireInstanceSlot(); !s.ok()) return s;

  std::unique_ptr<Timer> timer(
      new Timer(absl::Nanoseconds(tick_nanos), wheel,
                absl::Nanoseconds(shape->slack_nanos)));
  internal::WorkerConfig config;
  config.shape = {.tick_nanos = tick_nanos,
                  .ticks_per_wheel = wheel,
                  .slack_nanos = shape->slack_nanos};
  config.max_pending_timeouts = options.max_pending_timeouts;
  config.thread_name = std::move(options.thread_name);
  config.task_executor = std::move(options.task_executor);
  config.clock =
      internal::ResolveClock(std::move(options.clock), &config.monotonic_clock);
  config.owner = timer.get();
  try {
    timer->worker_ = std::make_shared<internal::Worker>(std::move(config));
  } catch (const std::bad_alloc&) {
    internal::ReleaseInstanceSlot();
    timer->counted_ = false;
    return absl::ResourceExhaustedError(
        fmt::format("not enough memory for a wheel of {} buckets", wheel));
  }
  return timer;
}

Timer::~Timer() {
  if (worker_ != nullptr) worker_->Shutdown();
  if (counted_.exchange(false)) internal::ReleaseInstanceSlot();
}

absl::StatusOr<Timeout> Timer::Schedule(internal::TaskEmplacer emplace,
                                        void* callable,
                                        const internal::DeadlineSpec& when) {
  absl::StatusOr<internal::TimeoutNode*> node =
      worker_->Schedule(emplace, callable, when);
  if (!node.ok()) return node.status();
  return internal::TimeoutAccess::Adopt(*node, worker_->engine().shared());
}

int64_t Timer::cancelAll() { return worker_->CancelAll(); }

TimePoint Timer::now() const {
  return TimePoint(std::chrono::nanoseconds(worker_->engine().NowNanos()));
}

absl::StatusOr<std::vector<Timeout>> Timer::stop() {
  absl::StatusOr<internal::Worker::StoppedNodes> nodes = worker_->Stop();
  if (!nodes.ok()) return nodes.status();
  if (counted_.exchange(false)) internal::ReleaseInstanceSlot();
  std::vector<Timeout> result;
  result.reserve(nodes->size());
  for (const internal::Worker::Stopped& s : *nodes) {
    result.push_back(
        internal::TimeoutAccess::Adopt(s.node, worker_->engine().shared()));
  }
  return result;
}

int64_t Timer::pendingTimeouts() const { return worker_->engine().pending(); }

TimerMetrics Timer::metrics() const {
  return internal::MetricsFrom(worker_->engine().counters(),
                               worker_->engine().pending(),
                               worker_->engine().CancelCalls());
}

}  // namespace tickwheel
