#include "tickwheel/timer/idle/idle_context.h"

#include <utility>

#include "tickwheel/base/nanos.h"

namespace tickwheel::internal {
namespace {

// The tracker whose on_idle this thread is running, if any.
thread_local const IdleContext* tls_callback_context = nullptr;

}  // namespace

IdleContext::IdleContext(IdleConfig config, IdleTaskExecutor task_executor)
    : config_(std::move(config)),
      has_task_executor_(static_cast<bool>(task_executor)),
      task_executor_(has_task_executor_
                         ? std::make_shared<const IdleTaskExecutor>(
                               std::move(task_executor))
                         : nullptr) {}

void IdleContext::RefreshCoarse(int64_t now) {
  const int64_t prev =
      coarse_.Publish(SaturatingAdd(now, config_.refresh_nanos));
  if (prev < now) {
    IdleCounters::RaiseTo(counters_.worst_clock_lag_nanos, now - prev);
  }
}

void IdleContext::RestartCoarse(int64_t now) {
  coarse_.Publish(SaturatingAdd(now, config_.refresh_nanos));
}

IdleTrackerMetrics IdleContext::Snapshot() const {
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
  return m;
}

std::shared_ptr<const IdleTaskExecutor> IdleContext::task_executor() const {
  IdleSpinLockGuard l(&executor_lock_);
  return task_executor_;
}

void IdleContext::DropTaskExecutor() {
  std::shared_ptr<const IdleTaskExecutor> dropped;
  {
    IdleSpinLockGuard l(&executor_lock_);
    dropped = std::move(task_executor_);
  }
  // Destroyed here, unlocked, unless a call is in progress.
}

IdleContext::CallbackScope::CallbackScope(IdleContext& context)
    : context_(context), outer_(std::exchange(tls_callback_context, &context)) {
  context_.running_callbacks_.fetch_add(1, std::memory_order_acq_rel);
}

IdleContext::CallbackScope::~CallbackScope() {
  tls_callback_context = outer_;
  if (context_.running_callbacks_.fetch_sub(1, std::memory_order_acq_rel) ==
      1) {
    context_.running_callbacks_.notify_all();
  }
}

bool IdleContext::InCallback() const { return tls_callback_context == this; }

void IdleContext::AwaitCallbacks() const {
  for (int n; (n = running_callbacks_.load(std::memory_order_acquire)) != 0;) {
    running_callbacks_.wait(n, std::memory_order_acquire);
  }
}

}  // namespace tickwheel::internal
