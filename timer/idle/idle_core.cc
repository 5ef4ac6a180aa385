#include "tickwheel/timer/idle/idle_core.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/timer/log.h"

namespace tickwheel::internal {

IdleCore::IdleCore(IdleConfig config, IdleResources resources)
    : context_(std::make_shared<IdleContext>(
          std::move(config), std::move(resources.task_executor))),
      activation_(context_, std::move(resources.clock),
                  std::move(resources.shared_timer)) {}

IdleCore::~IdleCore() = default;

IdleEntry* IdleCore::Register(absl::AnyInvocable<void()> on_idle,
                              int64_t timeout_nanos) {
  auto* entry = new IdleEntry(context_, timeout_nanos);
  absl::AnyInvocable<void()> none;  // the entry had no on_idle yet
  {
    MutexLock lock(&mu_);
    const int64_t now = activation_.NowNanos();
    bool was_tracked = false;
    none = entry->StartRegistration(std::move(on_idle), timeout_nanos,
                                    activation_.timer(), now, &was_tracked);
    registry_.PushFront(entry);
    IdleCounters::Add(context_->counters().tracked);
    activation_.Registered(now);  // counted first: see IdleRefresher
  }
  return entry;
}

absl::Status IdleCore::Reregister(IdleEntry* entry,
                                  absl::AnyInvocable<void()> on_idle,
                                  int64_t timeout_nanos) {
  absl::AnyInvocable<void()> previous;
  {
    MutexLock lock(&mu_);
    if (closed_ || entry->state() == IdleState::kDetached) {
      return absl::FailedPreconditionError(
          "reregister: the IdleTracker has been destroyed");
    }
    const int64_t now = activation_.NowNanos();
    bool was_tracked = false;
    previous = entry->StartRegistration(std::move(on_idle), timeout_nanos,
                                        activation_.timer(), now, &was_tracked);
    registry_.PushFront(entry);
    if (!was_tracked) IdleCounters::Add(context_->counters().tracked);
    activation_.Registered(now);
  }
  // `previous` (the old registration's on_idle) is destroyed here, unlocked.
  return absl::OkStatus();
}

bool IdleCore::Unregister(IdleEntry* entry) {
  IdleEntry::Ended ended;
  {
    MutexLock lock(&mu_);
    ended = entry->EndRegistration();
    registry_.Remove(entry);
  }
  const bool before_fire = ended.before_fire;
  entry->FinishUnregister(std::move(ended));
  return before_fire;
}

absl::Status IdleCore::Activate() {
  MutexLock lock(&mu_);
  if (closed_) {
    return absl::FailedPreconditionError(
        "Activate: the IdleTracker is being destroyed");
  }
  if (active_ > 0) {
    ++active_;
    return absl::OkStatus();
  }
  const int64_t now = activation_.NowNanos();
  absl::StatusOr<Timer*> timer = activation_.Start(now);
  if (!timer.ok()) return timer.status();
  registry_.ForEach([&](IdleEntry* e) { e->Rearm(*timer, now); });
  active_ = 1;
  return absl::OkStatus();
}

absl::Status IdleCore::Deactivate() {
  std::optional<IdleActivation::Ending> ending;
  {
    MutexLock lock(&mu_);
    if (active_ == 0) {
      return absl::FailedPreconditionError(
          "Deactivate: the tracker is not active (more Deactivate() than "
          "Activate() calls)");
    }
    if (--active_ > 0) return absl::OkStatus();
    if (activation_.on_shared_timer()) {
      // The application's timer keeps running: take our timeouts off it.
      registry_.ForEach([](IdleEntry* e) { e->Disarm(); });
    }
    ending.emplace(activation_.End());
  }
  return std::move(*ending).Finish();
}

void IdleCore::Close() {
  std::vector<absl::AnyInvocable<void()>> callbacks;
  std::optional<IdleActivation::Ending> ending;
  {
    MutexLock lock(&mu_);
    closed_ = true;
    active_ = 0;
    while (IdleEntry* e = registry_.front()) {
      bool was_tracked = false;
      callbacks.push_back(e->Detach(&was_tracked));
      if (was_tracked) IdleCounters::Add(context_->counters().tracked, -1);
      registry_.Remove(e);
    }
    // Every check still to come is stale now (its entry is detached), and
    // checks and refreshes read only the Timer they run on: nothing uses
    // the clock or the application's Timer after this.
    ending.emplace(activation_.Release());
  }
  // A check handing an on_idle call over holds its own reference until that
  // call returns.
  context_->DropTaskExecutor();
  callbacks.clear();  // the captures die here, unlocked
  absl::Status s = std::move(*ending).Finish();
  if (!s.ok()) {
    Log(LogSeverity::kWarning,
        fmt::format("~IdleTracker: {}", std::string(s.message())));
  }
  // `ending` drops the application's Timer and clock here.
}

bool IdleCore::active() const {
  MutexLock lock(&mu_);
  return active_ > 0;
}

IdleTrackerMetrics IdleCore::Metrics() const {
  IdleTrackerMetrics m = context_->Snapshot();
  MutexLock lock(&mu_);
  m.active = active_;
  return m;
}

TimerMetrics IdleCore::TimerMetricsSnapshot() const {
  MutexLock lock(&mu_);
  return activation_.Metrics();
}

}  // namespace tickwheel::internal
