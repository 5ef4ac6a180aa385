#include "tickwheel/timer/idle/idle_entry.h"

#include <algorithm>
#include <chrono>

#include "tickwheel/base/interleave.h"
#include "tickwheel/base/logging.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/timer/internal/library_timeouts.h"

namespace tickwheel::internal {
namespace {

// The entry whose on_idle this thread is running: lets unregister() from
// inside on_idle skip waiting for itself. (Whose tracker it belongs to is
// IdleContext::CallbackScope's business.)
thread_local const IdleEntry* tls_running_entry = nullptr;

// A timer's clock reading in nanoseconds.
int64_t TimerNowNanos(const Timer& timer) {
  return std::chrono::nanoseconds(timer.now().time_since_epoch()).count();
}

// The wheel task of one armed entry. 16 bytes: fits AnyInvocable's inline
// storage, so arming allocates only the timer's node.
class CheckTask {
 public:
  CheckTask(IdleEntry::Ref entry, uint64_t version)
      : entry_(std::move(entry)), version_(version) {}
  CheckTask(CheckTask&&) noexcept = default;
  void operator()(const Timeout& timeout) {
    entry_->OnTimeout(version_, timeout.timer());
  }

 private:
  IdleEntry::Ref entry_;
  uint64_t version_;
};

}  // namespace

// What the task executor receives: runs on_idle if the registration is still
// queued, and destroys it unrun if the executor drops the closure.
class IdleEntry::QueuedFire {
 public:
  QueuedFire(Ref entry, uint64_t version)
      : entry_(std::move(entry)), version_(version) {}
  QueuedFire(QueuedFire&&) noexcept = default;
  ~QueuedFire() {
    if (entry_.get() != nullptr) entry_->OnQueuedFire(false, version_);
  }
  void operator()() {
    Ref entry = std::move(entry_);
    if (entry.get() != nullptr) entry->OnQueuedFire(true, version_);
  }

 private:
  Ref entry_;
  uint64_t version_;
};

IdleEntry::IdleEntry(std::shared_ptr<IdleContext> context,
                     int64_t timeout_nanos)
    : timeout_nanos_(timeout_nanos), context_(std::move(context)) {}

int64_t IdleEntry::timeout_nanos() const {
  IdleSpinLockGuard l(&lock_);
  return timeout_nanos_;
}

void IdleEntry::CancelAndCount(const Timeout& t) {
  if (!t) return;
  t.cancel();
  IdleCounters::Add(context_->counters().timer_ops);
}

bool IdleEntry::ArmLocked(Timer* timer, int64_t delay_nanos) {
  ++version_;
  if (timer == nullptr) {
    SetStateLocked(IdleState::kDormant);
    return false;
  }
  absl::StatusOr<Timeout> t = LibraryTimeouts::NewTimeout(
      *timer, CheckTask(Ref(this), version_), absl::Nanoseconds(delay_nanos));
  IdleCounters::Add(context_->counters().timer_ops);
  if (!t.ok()) {
    // The timer refuses: it is stopping, or it is the application's and
    // was stopped or is at its pending limit. Dormant until the next
    // Activate() re-arms the entry.
    SetStateLocked(IdleState::kDormant);
    return false;
  }
  armed_ = *std::move(t);
  SetStateLocked(IdleState::kArmed);
  return true;
}

absl::AnyInvocable<void()> IdleEntry::StartRegistration(
    absl::AnyInvocable<void()> on_idle, int64_t timeout_nanos, Timer* timer,
    int64_t now, bool* was_tracked) {
  IdleSpinLockGuard l(&lock_);
  const IdleState s = state_.load(std::memory_order_relaxed);
  *was_tracked = s == IdleState::kDormant || s == IdleState::kArmed;
  CancelAndCount(TakeArmedLocked());
  absl::AnyInvocable<void()> previous =
      std::exchange(on_idle_, std::move(on_idle));
  timeout_nanos_ = timeout_nanos;
  stamp.store(now, std::memory_order_relaxed);
  ArmLocked(timer, timeout_nanos);
  return previous;
}

void IdleEntry::Rearm(Timer* timer, int64_t now) {
  IdleSpinLockGuard l(&lock_);
  const IdleState s = state_.load(std::memory_order_relaxed);
  if (s != IdleState::kDormant && s != IdleState::kArmed) return;
  // A timeout of an earlier activation: its timer was stopped, so this
  // normally fails and only drops our reference to it.
  CancelAndCount(TakeArmedLocked());
  // Time spent inactive never counts as idle: touch() could not stamp
  // accurately while nothing refreshed the coarse clock.
  const int64_t from = std::max(stamp.load(std::memory_order_relaxed), now);
  stamp.store(from, std::memory_order_relaxed);
  ArmLocked(timer, SaturatingAdd(from, timeout_nanos_) - now);
}

void IdleEntry::Disarm() {
  IdleSpinLockGuard l(&lock_);
  if (state_.load(std::memory_order_relaxed) != IdleState::kArmed) return;
  ++version_;
  SetStateLocked(IdleState::kDormant);
  CancelAndCount(TakeArmedLocked());
}

absl::AnyInvocable<void()> IdleEntry::Detach(bool* was_tracked) {
  IdleSpinLockGuard l(&lock_);
  const IdleState s = state_.load(std::memory_order_relaxed);
  *was_tracked = s == IdleState::kDormant || s == IdleState::kArmed;
  if (s == IdleState::kDetached) return nullptr;
  ++version_;
  SetStateLocked(IdleState::kDetached);
  CancelAndCount(TakeArmedLocked());
  return std::move(on_idle_);
}

IdleEntry::Ended IdleEntry::EndRegistration() {
  Ended ended;
  IdleSpinLockGuard l(&lock_);
  const IdleState s = state_.load(std::memory_order_relaxed);
  if (s == IdleState::kDormant || s == IdleState::kArmed) {
    IdleCounters::Add(context_->counters().tracked, -1);
    ended.before_fire = true;
  } else if (s == IdleState::kQueued) {
    ended.before_fire = true;  // tracked already dropped when found idle
  }
  if (s != IdleState::kDetached && s != IdleState::kUnregistered) {
    ++version_;
    SetStateLocked(IdleState::kUnregistered);
  }
  ended.armed = TakeArmedLocked();
  ended.on_idle = std::move(on_idle_);
  ended.wait =
      running_.load(std::memory_order_relaxed) && tls_running_entry != this;
  return ended;
}

void IdleEntry::FinishUnregister(Ended ended) {
  CancelAndCount(ended.armed);
  ended.on_idle = nullptr;  // the captures die here, on the caller's thread
  if (ended.wait) {
    // A check won the race and on_idle is running on another thread: wait
    // until it has returned and its captures are destroyed.
    while (running_.load(std::memory_order_acquire)) {
      running_.wait(true, std::memory_order_acquire);
    }
  }
}

void IdleEntry::OnTimeout(uint64_t version, Timer* timer) {
  IdleCounters& counters = context_->counters();
  // The Timer this check runs on is alive inside its own task; it is null
  // only for a check that an application Timer's executor runs after that
  // Timer's destruction began, which can only follow Close(): such a check
  // finds its entry detached.
  const int64_t now = timer != nullptr ? TimerNowNanos(*timer) : 0;
  absl::AnyInvocable<void()> on_idle;
  uint64_t fired_version = 0;
  bool use_executor = false;
  TICKWHEEL_INTERLEAVE_POINT();  // a touch() or unregister() may come here
  {
    IdleSpinLockGuard l(&lock_);
    if (version != version_ ||
        state_.load(std::memory_order_relaxed) != IdleState::kArmed) {
      IdleCounters::Add(counters.stale_dropped);
      return;
    }
    armed_ = Timeout();  // this very timeout; it has expired
    if (timer == nullptr) {
      ArmLocked(nullptr, 0);  // nothing to run on: dormant
      return;
    }
    context_->RefreshCoarse(now);
    const int64_t deadline =
        SaturatingAdd(stamp.load(std::memory_order_relaxed), timeout_nanos_);
    if (now < deadline) {
      // Activity since we were armed: back on the wheel for exactly the
      // remaining time. The Timer never runs a task early, so the next check
      // happens at or after `deadline`.
      if (ArmLocked(timer, deadline - now)) IdleCounters::Add(counters.rearmed);
      return;
    }
    fired_version = ++version_;
    IdleCounters::Add(counters.tracked, -1);
    IdleCounters::RaiseTo(counters.worst_lateness_nanos, now - deadline);
    use_executor = context_->has_task_executor();
    if (use_executor) {
      SetStateLocked(IdleState::kQueued);
    } else {
      SetStateLocked(IdleState::kRunning);
      running_.store(true, std::memory_order_relaxed);
      on_idle = std::move(on_idle_);
    }
  }
  if (use_executor) {
    QueueOnIdle(fired_version);
  } else {
    RunOnIdle(std::move(on_idle), fired_version);
  }
}

void IdleEntry::QueueOnIdle(uint64_t fired_version) {
  QueuedFire fire(Ref(this), fired_version);
  // Null once the tracker is closed: `fire` is then destroyed unrun (the
  // entry is detached, so that finds nothing to do).
  const std::shared_ptr<const IdleTaskExecutor> executor =
      context_->task_executor();
  if (executor == nullptr) return;
  // If it throws, the closure was destroyed unrun: on_idle is destroyed,
  // never run.
  RunLoggingExceptions("idle tracker: the task_executor",
                       "that on_idle did not run",
                       [&] { (*executor)(std::move(fire)); });
}

void IdleEntry::OnQueuedFire(bool run, uint64_t version) {
  absl::AnyInvocable<void()> on_idle;
  {
    IdleSpinLockGuard l(&lock_);
    if (version != version_ ||
        state_.load(std::memory_order_relaxed) != IdleState::kQueued) {
      return;  // unregistered, re-registered or detached meanwhile
    }
    on_idle = std::move(on_idle_);
    if (run) {
      SetStateLocked(IdleState::kRunning);
      running_.store(true, std::memory_order_relaxed);
    } else {
      SetStateLocked(IdleState::kFired);
    }
  }
  if (run) RunOnIdle(std::move(on_idle), version);
  // else: destroyed here, unrun.
}

void IdleEntry::RunOnIdle(absl::AnyInvocable<void()> on_idle,
                          uint64_t fired_version) {
  // Counted until the end of this function: the end of an activation waits
  // for it, so it must see the state and running_ settled.
  IdleContext::CallbackScope in_callback(*context_);
  IdleCounters::Add(context_->counters().fired);
  const IdleEntry* const outer_entry = std::exchange(tls_running_entry, this);
  RunLoggingExceptions("an on_idle callback", "the tracker goes on",
                       [&] { on_idle(); });
  on_idle = nullptr;  // captures released before a waiting unregister returns
  tls_running_entry = outer_entry;
  TICKWHEEL_INTERLEAVE_POINT();
  {
    IdleSpinLockGuard l(&lock_);
    // Unless unregister/re-register/detach moved on while it ran.
    if (version_ == fired_version &&
        state_.load(std::memory_order_relaxed) == IdleState::kRunning) {
      SetStateLocked(IdleState::kFired);
    }
  }
  running_.store(false, std::memory_order_release);
  running_.notify_all();
}

}  // namespace tickwheel::internal
