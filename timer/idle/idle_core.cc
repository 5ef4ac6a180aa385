#include "tickwheel/timer/idle/idle_core.h"

#include <condition_variable>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/timer/idle/library_timeouts.h"
#include "tickwheel/worker/logging.h"

namespace tickwheel::internal {

// The periodic coarse-clock refresh of one activation. Holds the core: on an
// application's Timer a pending refresh may outlive the tracker until the
// end of the activation cancels it.
class IdleCore::RefreshTask {
 public:
  RefreshTask(std::shared_ptr<IdleCore> core, uint64_t generation)
      : core_(std::move(core)), generation_(generation) {}
  void operator()(const Timeout& timeout) {
    core_->OnRefresh(timeout.timer(), generation_);
  }

 private:
  std::shared_ptr<IdleCore> core_;
  uint64_t generation_;
};

IdleCore::IdleCore(IdleCoreConfig config, IdleCoreResources resources)
    : config_(std::move(config)),
      has_task_executor_(static_cast<bool>(resources.task_executor)),
      task_executor_(has_task_executor_
                         ? std::make_shared<const IdleTaskExecutor>(
                               std::move(resources.task_executor))
                         : nullptr),
      clock_(std::move(resources.clock)),
      shared_timer_(std::move(resources.shared_timer)) {}

IdleCore::~IdleCore() = default;

void IdleCore::AddToRegistryLocked(IdleEntry* entry) {
  if (entry->in_registry_) return;
  entry->reg_prev_ = nullptr;
  entry->reg_next_ = registry_head_;
  if (registry_head_ != nullptr) registry_head_->reg_prev_ = entry;
  registry_head_ = entry;
  entry->in_registry_ = true;
}

void IdleCore::RemoveFromRegistryLocked(IdleEntry* entry) {
  if (!entry->in_registry_) return;
  if (entry->reg_prev_ != nullptr) {
    entry->reg_prev_->reg_next_ = entry->reg_next_;
  } else {
    registry_head_ = entry->reg_next_;
  }
  if (entry->reg_next_ != nullptr)
    entry->reg_next_->reg_prev_ = entry->reg_prev_;
  entry->reg_prev_ = entry->reg_next_ = nullptr;
  entry->in_registry_ = false;
}

bool IdleCore::Unregister(IdleEntry* entry) {
  IdleEntry::Ended ended;
  {
    MutexLock lock(&mu_);
    ended = entry->EndRegistration();
    RemoveFromRegistryLocked(entry);
  }
  const bool before_fire = ended.before_fire;
  entry->FinishUnregister(std::move(ended));
  return before_fire;
}

IdleEntry* IdleCore::Register(absl::AnyInvocable<void()> on_idle,
                              int64_t timeout_nanos) {
  auto* entry = new IdleEntry(shared_from_this(), nullptr, timeout_nanos);
  absl::AnyInvocable<void()> none;
  {
    MutexLock lock(&mu_);
    const int64_t now = NowNanosLocked();
    bool was_tracked = false;
    none = entry->StartRegistration(std::move(on_idle), timeout_nanos, timer_,
                                    now, &was_tracked);
    AddToRegistryLocked(entry);
    IdleCounters::Add(counters_.tracked);
    // Fails only when the timer refuses; the entry is then dormant too.
    (void)ResumeRefreshesLocked(now);
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
    const int64_t now = NowNanosLocked();
    bool was_tracked = false;
    previous = entry->StartRegistration(std::move(on_idle), timeout_nanos,
                                        timer_, now, &was_tracked);
    AddToRegistryLocked(entry);
    if (!was_tracked) IdleCounters::Add(counters_.tracked);
    (void)ResumeRefreshesLocked(now);
  }
  // `previous` (the old registration's on_idle) is destroyed here, unlocked.
  return absl::OkStatus();
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
  std::unique_ptr<Timer> owned;
  Timer* timer = shared_timer_.get();
  if (timer == nullptr) {
    TimerOptions options;
    options.tick_duration = config_.tick_duration;
    options.ticks_per_wheel = config_.ticks_per_wheel;
    options.thread_name = config_.thread_name;
    options.clock = clock_;
    // No task_executor on the Timer: checks are bookkeeping and run on the
    // worker; only on_idle goes to the tracker's executor.
    absl::StatusOr<std::unique_ptr<Timer>> created = Timer::Create(options);
    if (!created.ok()) return created.status();
    owned = *std::move(created);
    timer = owned.get();
  }
  const int64_t now = NowNanosLocked();
  // Fails when the application's timer was stopped (found while scheduling
  // the refresh, which happens when something is tracked).
  if (absl::Status s = StartRefreshes(timer, now); !s.ok()) {
    EndRefreshes();
    return s;
  }
  for (IdleEntry* e = registry_head_; e != nullptr; e = e->reg_next_) {
    e->Rearm(timer, now);
  }
  owned_timer_ = std::move(owned);
  timer_ = timer;
  active_ = 1;
  return absl::OkStatus();
}

absl::Status IdleCore::StartRefreshes(Timer* timer, int64_t now) {
  coarse_.Publish(SaturatingAdd(now, config_.refresh_nanos));
  uint64_t generation;
  {
    IdleSpinLockGuard l(&refresh_lock_);
    generation = ++generation_;
    refresh_timer_ = timer;
    refresh_paused_ = counters_.tracked.load(std::memory_order_relaxed) == 0;
    if (refresh_paused_) return absl::OkStatus();
  }
  return ScheduleRefresh(timer, generation);
}

absl::Status IdleCore::ResumeRefreshesLocked(int64_t now) {
  uint64_t generation;
  Timer* timer;
  {
    IdleSpinLockGuard l(&refresh_lock_);
    if (!refresh_paused_ || refresh_timer_ == nullptr) {
      return absl::OkStatus();  // running, or the tracker is inactive
    }
    refresh_paused_ = false;
    generation = generation_;
    timer = refresh_timer_;  // timer_, alive: we hold mu_
  }
  // A fresh ceiling before any touch() can read the paused one: the caller
  // returns the registration only after this.
  coarse_.Publish(SaturatingAdd(now, config_.refresh_nanos));
  return ScheduleRefresh(timer, generation);
}

absl::Status IdleCore::ScheduleRefresh(Timer* timer, uint64_t generation) {
  // Runs at the first tick end at or after now + refresh - tick, which is at
  // most now + refresh: the ceiling just published holds until then.
  absl::StatusOr<Timeout> next = LibraryTimeouts::NewTimeout(
      *timer, RefreshTask(shared_from_this(), generation),
      absl::Nanoseconds(config_.refresh_nanos) - config_.tick_duration);
  IdleSpinLockGuard l(&refresh_lock_);
  if (!next.ok()) {
    // The timer refuses (stopped, or the application's pending limit): the
    // next registration tries again.
    if (generation_ == generation) {
      refresh_paused_ = true;
      refresh_ = Timeout();
    }
    return next.status();
  }
  if (generation_ != generation) {
    next->cancel();  // the activation ended meanwhile
  } else {
    refresh_ = *std::move(next);
  }
  return absl::OkStatus();
}

void IdleCore::OnRefresh(Timer* timer, uint64_t generation) {
  // Null only when the application's Timer runs its tasks on an executor
  // and has begun its destruction, which it can only after Close().
  if (timer == nullptr) return;
  {
    IdleSpinLockGuard l(&refresh_lock_);
    if (generation_ != generation) return;  // that activation has ended
    if (counters_.tracked.load(std::memory_order_relaxed) == 0) {
      // Nothing to refresh for: pause until the next registration.
      refresh_paused_ = true;
      refresh_ = Timeout();
      return;
    }
  }
  RefreshCoarse(TimerNowNanos(*timer));
  IdleCounters::Add(counters_.refreshes);
  // Fails only when the timer refuses, which pauses the refreshing.
  (void)ScheduleRefresh(timer, generation);
}

void IdleCore::EndRefreshes() {
  Timeout pending;
  {
    IdleSpinLockGuard l(&refresh_lock_);
    ++generation_;
    refresh_timer_ = nullptr;
    refresh_paused_ = true;
    pending = std::exchange(refresh_, Timeout());
  }
  pending.cancel();  // destroys the task and its core reference
}

void IdleCore::DisarmAllLocked() {
  for (IdleEntry* e = registry_head_; e != nullptr; e = e->reg_next_) {
    e->Disarm();
  }
}

absl::Status IdleCore::Deactivate() {
  std::unique_ptr<Timer> timer;
  {
    MutexLock lock(&mu_);
    if (active_ == 0) {
      return absl::FailedPreconditionError(
          "Deactivate: the tracker is not active (more Deactivate() than "
          "Activate() calls)");
    }
    if (--active_ > 0) return absl::OkStatus();
    if (owned_timer_ == nullptr) {
      // The application's timer keeps running: take our timeouts off it.
      DisarmAllLocked();
    }
    timer_ = nullptr;
    timer = std::move(owned_timer_);
  }
  EndRefreshes();
  return StopTimer(std::move(timer));
}

void IdleCore::Close() {
  std::unique_ptr<Timer> timer;
  std::vector<absl::AnyInvocable<void()>> callbacks;
  // What the application gave: released at the end of this function, with
  // no lock held (the last reference to its Timer joins that Timer's worker).
  std::shared_ptr<Timer> shared_timer;
  std::shared_ptr<Clock> clock;
  std::shared_ptr<const IdleTaskExecutor> task_executor;
  {
    MutexLock lock(&mu_);
    closed_ = true;
    active_ = 0;
    timer_ = nullptr;
    timer = std::move(owned_timer_);
    while (IdleEntry* e = registry_head_) {
      bool was_tracked = false;
      callbacks.push_back(e->Detach(&was_tracked));
      if (was_tracked) IdleCounters::Add(counters_.tracked, -1);
      RemoveFromRegistryLocked(e);
    }
    // Every check still to run is stale now (its entry is detached), and
    // checks and refreshes never read these: they use the Timer they run on.
    shared_timer = std::move(shared_timer_);
    clock = std::move(clock_);
  }
  {
    // A check that is handing an on_idle call over holds its own reference
    // until that call returns.
    IdleSpinLockGuard l(&executor_lock_);
    task_executor = std::move(task_executor_);
  }
  callbacks.clear();  // the captures die here, unlocked
  EndRefreshes();
  absl::Status s = StopTimer(std::move(timer));
  if (!s.ok())
    Log(LogSeverity::kWarning,
        fmt::format("~IdleTracker: {}", std::string(s.message())));
}

void IdleCore::AwaitCallbacks() {
  for (int n; (n = running_callbacks_.load(std::memory_order_acquire)) != 0;) {
    running_callbacks_.wait(n, std::memory_order_acquire);
  }
}

absl::Status IdleCore::StopTimer(std::unique_ptr<Timer> timer) {
  struct Done {
    Mutex mu;
    std::condition_variable_any cv;
    bool done ABSL_GUARDED_BY(mu) = false;
  };
  auto done = std::make_shared<Done>();
  std::thread stopper(
      [self = shared_from_this(), timer = std::move(timer), done]() mutable {
        if (timer != nullptr) {
          // Every timeout on it is a library timeout: stop() destroys their
          // tasks (and the entry references they hold) unrun and returns
          // none. The entries stay kArmed (registered, dormant) for the
          // next Activate().
          (void)timer->stop();
          {
            MutexLock lock(&self->mu_);
            self->last_timer_metrics_ = timer->metrics();
          }
          timer.reset();
        }
        self->AwaitCallbacks();
        MutexLock lock(&done->mu);
        done->done = true;
        done->cv.notify_all();
      });
  if (InCallbackOf(this)) {
    // Called from one of our own callbacks: the stop needs this callback to
    // return first, so it finishes in the background.
    stopper.detach();
    return absl::OkStatus();
  }
  bool finished;
  {
    MutexLock lock(&done->mu);
    finished = done->cv.wait_for(
        done->mu, absl::ToChronoNanoseconds(config_.drain_timeout),
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
      absl::FormatDuration(config_.drain_timeout)));
}

bool IdleCore::active() const {
  MutexLock lock(&mu_);
  return active_ > 0;
}

IdleTrackerMetrics IdleCore::Metrics() const {
  IdleTrackerMetrics m;
  m.tracked = counters_.tracked.load(std::memory_order_relaxed);
  m.fired = counters_.fired.load(std::memory_order_relaxed);
  m.rearmed = counters_.rearmed.load(std::memory_order_relaxed);
  m.stale_dropped = counters_.stale_dropped.load(std::memory_order_relaxed);
  m.timer_ops = counters_.timer_ops.load(std::memory_order_relaxed);
  m.refreshes = counters_.refreshes.load(std::memory_order_relaxed);
  m.worst_lateness = absl::Nanoseconds(
      counters_.worst_lateness_nanos.load(std::memory_order_relaxed));
  m.worst_clock_lag = absl::Nanoseconds(
      counters_.worst_clock_lag_nanos.load(std::memory_order_relaxed));
  MutexLock lock(&mu_);
  m.active = active_;
  return m;
}

TimerMetrics IdleCore::TimerMetricsSnapshot() const {
  MutexLock lock(&mu_);
  if (timer_ != nullptr) return timer_->metrics();
  // Inactive: the last activation's own timer, or the application's timer
  // as it is now.
  return shared_timer_ != nullptr ? shared_timer_->metrics()
                                  : last_timer_metrics_;
}

}  // namespace tickwheel::internal
