#include "tickwheel/timer/idle_tracker.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/timer/idle/idle_core.h"

namespace tickwheel {
namespace {

// A positive duration in nanoseconds, saturating (InfiniteDuration: never).
absl::StatusOr<int64_t> TimeoutNanos(absl::Duration d, const char* what) {
  if (d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be > 0, got {}", what, absl::FormatDuration(d)));
  }
  return std::max<int64_t>(1, absl::ToInt64Nanoseconds(d));
}

}  // namespace

// ---------------------------------------------------------------- IdleHandle

IdleHandle::IdleHandle(internal::IdleEntry* entry,
                       const std::atomic<int64_t>* now,
                       std::weak_ptr<internal::IdleCore> core)
    : entry_(entry), now_(now), core_(std::move(core)) {}

internal::IdleEntry* IdleHandle::entry() const {
  return static_cast<internal::IdleEntry*>(entry_);
}

IdleHandle::IdleHandle(IdleHandle&& other) noexcept
    : entry_(std::exchange(other.entry_, nullptr)),
      now_(std::exchange(other.now_, nullptr)),
      core_(std::move(other.core_)) {}

IdleHandle& IdleHandle::operator=(IdleHandle&& other) noexcept {
  if (this != &other) {
    Release();
    entry_ = std::exchange(other.entry_, nullptr);
    now_ = std::exchange(other.now_, nullptr);
    core_ = std::move(other.core_);
  }
  return *this;
}

IdleHandle::~IdleHandle() { Release(); }

void IdleHandle::Release() {
  if (entry_ == nullptr) return;
  unregister();
  internal::IdleEntry* entry = this->entry();
  entry_ = nullptr;
  entry->Unref();
  now_ = nullptr;
  core_.reset();
}

bool IdleHandle::unregister() {
  if (entry_ == nullptr) return false;
  if (const std::shared_ptr<internal::IdleCore> core = core_.lock()) {
    return core->Unregister(entry());
  }
  // The tracker is gone and has detached the registration, which is in no
  // registry any more; this only waits for an on_idle still running (one
  // that outlived the destructor's drain timeout).
  entry()->FinishUnregister(entry()->EndRegistration());
  return false;
}

absl::Status IdleHandle::reregister(absl::AnyInvocable<void()> on_idle) {
  if (entry_ == nullptr) {
    return absl::FailedPreconditionError("reregister: empty IdleHandle");
  }
  return reregister(
      std::move(on_idle),
      absl::Nanoseconds(entry()->context().config().default_timeout_nanos));
}

absl::Status IdleHandle::reregister(absl::AnyInvocable<void()> on_idle,
                                    absl::Duration idle_timeout) {
  if (entry_ == nullptr) {
    return absl::FailedPreconditionError("reregister: empty IdleHandle");
  }
  if (!on_idle) {
    return absl::InvalidArgumentError("reregister: on_idle is empty");
  }
  absl::StatusOr<int64_t> nanos = TimeoutNanos(idle_timeout, "idle_timeout");
  if (!nanos.ok()) return nanos.status();
  const std::shared_ptr<internal::IdleCore> core = core_.lock();
  if (core == nullptr) {
    return absl::FailedPreconditionError(
        "reregister: the IdleTracker has been destroyed");
  }
  return core->Reregister(entry(), std::move(on_idle), *nanos);
}

bool IdleHandle::isRegistered() const {
  if (entry_ == nullptr) return false;
  const internal::IdleState s = entry()->state();
  return s == internal::IdleState::kDormant || s == internal::IdleState::kArmed;
}

bool IdleHandle::hasFired() const {
  if (entry_ == nullptr) return false;
  const internal::IdleState s = entry()->state();
  return s == internal::IdleState::kQueued ||
         s == internal::IdleState::kRunning || s == internal::IdleState::kFired;
}

absl::Duration IdleHandle::idleTimeout() const {
  return entry_ == nullptr ? absl::ZeroDuration()
                           : absl::Nanoseconds(entry()->timeout_nanos());
}

// --------------------------------------------------------------- IdleTracker

absl::StatusOr<std::unique_ptr<IdleTracker>> IdleTracker::Create(
    IdleTrackerOptions options) {
  absl::StatusOr<int64_t> timeout =
      TimeoutNanos(options.default_idle_timeout, "default_idle_timeout");
  if (!timeout.ok()) return timeout.status();
  if (options.timer != nullptr && options.clock != nullptr) {
    return absl::InvalidArgumentError(
        "IdleTrackerOptions: set either timer or clock (a tracker on an "
        "application's Timer uses that timer's clock)");
  }
  if (options.timer != nullptr) {
    options.tick_duration = options.timer->tickDuration();
    options.ticks_per_wheel = options.timer->ticksPerWheel();
  }
  {
    // The wheel underneath: the Timer's own checks.
    TimerOptions wheel;
    wheel.tick_duration = options.tick_duration;
    wheel.ticks_per_wheel = options.ticks_per_wheel;
    if (absl::Status s = Timer::CheckOptions(wheel); !s.ok()) return s;
  }
  internal::IdleConfig config;
  config.default_timeout_nanos = *timeout;
  // Whole nanoseconds, as the Timer will use them.
  config.tick_duration =
      absl::Nanoseconds(absl::ToInt64Nanoseconds(options.tick_duration));
  config.ticks_per_wheel = options.ticks_per_wheel;
  config.refresh_nanos =
      std::max(absl::ToInt64Nanoseconds(options.refresh_period),
               absl::ToInt64Nanoseconds(config.tick_duration));
  config.drain_timeout = std::max(options.drain_timeout, absl::ZeroDuration());
  config.thread_name = std::move(options.thread_name);
  internal::IdleResources resources;
  resources.task_executor = std::move(options.task_executor);
  if (options.timer != nullptr) {
    resources.shared_timer = std::move(options.timer);
  } else {
    resources.clock =
        options.clock ? std::move(options.clock) : RealClock::Shared();
  }
  // Not make_shared: handles hold weak references to the core, which would
  // keep the memory of a make_shared object until the last one is gone.
  return std::unique_ptr<IdleTracker>(
      new IdleTracker(std::shared_ptr<internal::IdleCore>(
          new internal::IdleCore(std::move(config), std::move(resources)))));
}

IdleTracker::IdleTracker(std::shared_ptr<internal::IdleCore> core)
    : core_(std::move(core)) {}

IdleTracker::~IdleTracker() { core_->Close(); }

absl::StatusOr<IdleHandle> IdleTracker::Register(
    absl::AnyInvocable<void()> on_idle) {
  return Register(
      std::move(on_idle),
      absl::Nanoseconds(core_->context().config().default_timeout_nanos));
}

absl::StatusOr<IdleHandle> IdleTracker::Register(
    absl::AnyInvocable<void()> on_idle, absl::Duration idle_timeout) {
  if (!on_idle) {
    return absl::InvalidArgumentError("Register: on_idle is empty");
  }
  absl::StatusOr<int64_t> nanos = TimeoutNanos(idle_timeout, "idle_timeout");
  if (!nanos.ok()) return nanos.status();
  internal::IdleEntry* entry = core_->Register(std::move(on_idle), *nanos);
  return IdleHandle(entry, core_->context().coarse().cell(), core_);
}

absl::Status IdleTracker::Activate() { return core_->Activate(); }

absl::Status IdleTracker::Deactivate() { return core_->Deactivate(); }

bool IdleTracker::isActive() const { return core_->active(); }

absl::Duration IdleTracker::defaultIdleTimeout() const {
  return absl::Nanoseconds(core_->context().config().default_timeout_nanos);
}

IdleTrackerMetrics IdleTracker::metrics() const { return core_->Metrics(); }

TimerMetrics IdleTracker::timerMetrics() const {
  return core_->TimerMetricsSnapshot();
}

}  // namespace tickwheel
