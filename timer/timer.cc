#include "tickwheel/timer/timer.h"

#include <algorithm>
#include <memory>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/base/time_source.h"
#include "tickwheel/worker/wheel.h"
#include "tickwheel/worker/worker.h"

namespace tickwheel {

Timer::Timer(absl::Duration tick, int ticks_per_wheel, absl::Duration slack)
    : tick_duration_(tick), ticks_per_wheel_(ticks_per_wheel), slack_(slack) {}

namespace {

// A user's Clock as the engine's TimeSource: forwards every call.
class ClockSource final : public internal::TimeSource {
 public:
  explicit ClockSource(std::shared_ptr<Clock> clock)
      : clock_(std::move(clock)) {}
  int64_t NowNanos() override { return clock_->NowNanos(); }
  std::unique_ptr<internal::TimeSource::Sleeper> NewSleeper() override {
    return std::make_unique<SleeperSource>(clock_->NewSleeper());
  }

 private:
  class SleeperSource final : public internal::TimeSource::Sleeper {
   public:
    explicit SleeperSource(std::unique_ptr<Clock::Sleeper> sleeper)
        : sleeper_(std::move(sleeper)) {}
    void SleepUntil(int64_t deadline_nanos) override {
      sleeper_->SleepUntil(deadline_nanos);
    }
    void Wake() override { sleeper_->Wake(); }

   private:
    const std::unique_ptr<Clock::Sleeper> sleeper_;
  };

  const std::shared_ptr<Clock> clock_;
};

// The engine's TaskCaller: the task in `slot`, called with the handle of the
// timeout of `node`, lent the engine's reference for the call (no reference
// count traffic).
void CallWithHandle(internal::TaskSlot& slot, internal::TimeoutNode* node,
                    internal::SharedTimerState* shared) {
  Timeout timeout = internal::TimeoutAccess::Adopt(node, shared);
  struct GiveBack {
    Timeout& t;
    ~GiveBack() { internal::TimeoutAccess::Disown(t); }
  } give_back{timeout};
  slot.Invoke(std::as_const(timeout));
}

// The options' wheel, checked: the tick in nanoseconds, ticks_per_wheel
// rounded up to a power of two, and the slack in [0, tick] nanoseconds.
struct CheckedShape {
  int64_t tick_nanos;
  int ticks_per_wheel;
  int64_t slack_nanos;
};

absl::StatusOr<CheckedShape> CheckWheel(const TimerOptions& options) {
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
    return absl::InvalidArgumentError(
        fmt::format("ticks_per_wheel must be in [1, 2^30], got {}",
                    options.ticks_per_wheel));
  }
  const int wheel =
      internal::Wheel::NormalizeTicksPerWheel(options.ticks_per_wheel);
  if (tick_nanos > INT64_MAX / wheel) {
    return absl::InvalidArgumentError(fmt::format(
        "tick_duration ({}) * ticks_per_wheel ({}, rounded up from {}) "
        "overflows int64 nanoseconds; use a shorter tick or a smaller wheel",
        absl::FormatDuration(options.tick_duration), wheel,
        options.ticks_per_wheel));
  }
  int64_t slack_nanos = tick_nanos;
  if (options.slack.has_value()) {
    if (*options.slack < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(fmt::format(
          "slack must be >= 0, got {}", absl::FormatDuration(*options.slack)));
    }
    // Whole nanoseconds, rounded down: never later than asked.
    slack_nanos =
        std::min(tick_nanos, absl::ToInt64Nanoseconds(absl::Trunc(
                                 *options.slack, absl::Nanoseconds(1))));
  }
  return CheckedShape{tick_nanos, wheel, slack_nanos};
}

}  // namespace

absl::Status Timer::CheckOptions(const TimerOptions& options) {
  return CheckWheel(options).status();
}

absl::StatusOr<std::unique_ptr<Timer>> Timer::Create(TimerOptions options) {
  absl::StatusOr<CheckedShape> shape = CheckWheel(options);
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
  config.call_task = &CallWithHandle;
  config.thread_name = std::move(options.thread_name);
  config.task_executor = std::move(options.task_executor);
  std::shared_ptr<Clock> clock =
      options.clock ? std::move(options.clock) : RealClock::Shared();
  config.monotonic_clock = dynamic_cast<RealClock*>(clock.get()) != nullptr;
  config.clock = std::make_shared<ClockSource>(std::move(clock));
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
  return internal::TimeoutAccess::Adopt(*node, worker_->shared());
}

absl::Status Timer::EmptyTaskError() {
  return absl::InvalidArgumentError(
      "newTimeout: the task is empty; pass a callable");
}

absl::Status Timer::PeriodError(absl::Duration period) {
  return absl::InvalidArgumentError(
      fmt::format("newPeriodic: the period must be > 0 and finite, got {}",
                  absl::FormatDuration(period)));
}

absl::Status Timer::NanError(const char* call, const char* what) {
  return absl::InvalidArgumentError(
      fmt::format("{}: the {} is NaN; pass a number of seconds (or of any "
                  "std::chrono period)",
                  call, what));
}

int64_t Timer::cancelAll() { return worker_->CancelAll(); }

TimePoint Timer::now() const {
  return TimePoint(std::chrono::nanoseconds(worker_->NowNanos()));
}

absl::StatusOr<std::vector<Timeout>> Timer::stop() {
  absl::StatusOr<internal::Worker::StoppedNodes> nodes = worker_->Stop();
  if (!nodes.ok()) return nodes.status();
  if (counted_.exchange(false)) internal::ReleaseInstanceSlot();
  std::vector<Timeout> result;
  result.reserve(nodes->size());
  for (const internal::Worker::Stopped& s : *nodes) {
    result.push_back(internal::TimeoutAccess::Adopt(s.node, worker_->shared()));
  }
  return result;
}

int64_t Timer::pendingTimeouts() const { return worker_->pending(); }

TimerMetrics Timer::metrics() const {
  const internal::CountersSnapshot c = worker_->Counters();
  TimerMetrics m;
  m.pending = c.pending;
  m.expired = c.expired;
  m.cancelled = c.cancelled;
  m.ticks = c.ticks;
  m.catch_up_ticks = c.catch_up_ticks;
  m.wakeups = c.wakeups;
  m.worst_lateness = absl::Nanoseconds(c.worst_lateness_nanos);
  const internal::HistogramCounts& h = worker_->lateness();
  for (int b = 0; b < internal::kHistogramBuckets; ++b) {
    const int64_t n = h.counts[b].load(std::memory_order_relaxed);
    m.lateness.counts_[b] = n;
    m.lateness.count_ += n;
  }
  m.lateness.max_ = h.max.load(std::memory_order_relaxed);
  return m;
}

}  // namespace tickwheel
