#include "tickwheel/timer/instance_limit.h"

#include <atomic>

#include <fmt/format.h>

#include "absl/base/attributes.h"
#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/timer/log.h"

namespace tickwheel {
namespace {

std::atomic<int64_t> live_timers{0};
std::atomic<bool> warned{false};

// Constant-initialized, so SetInstanceLimit() works from static initializers.
ABSL_CONST_INIT internal::Mutex limit_mu;
InstanceLimit current_limit ABSL_GUARDED_BY(limit_mu);

InstanceLimit GetLimit() ABSL_LOCKS_EXCLUDED(limit_mu) {
  internal::MutexLock lock(&limit_mu);
  return current_limit;
}

}  // namespace

InstanceLimit SetInstanceLimit(InstanceLimit limit) {
  internal::MutexLock lock(&limit_mu);
  InstanceLimit previous = current_limit;
  current_limit = limit;
  return previous;
}

int64_t LiveTimerCount() { return live_timers.load(std::memory_order_relaxed); }

namespace internal {

absl::Status AcquireInstanceSlot() {
  const InstanceLimit limit = GetLimit();
  const int64_t live = live_timers.fetch_add(1, std::memory_order_relaxed) + 1;
  if (limit.max_instances <= 0 || live <= limit.max_instances) {
    return absl::OkStatus();
  }
  if (limit.fail_create) {
    live_timers.fetch_sub(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(fmt::format(
        "too many tickwheel Timer instances: {} live, limit {}; reuse one "
        "Timer across the application, or raise the limit with "
        "tickwheel::SetInstanceLimit()",
        live - 1, limit.max_instances));
  }
  if (!warned.exchange(true, std::memory_order_relaxed)) {
    Log(LogSeverity::kWarning,
        fmt::format("You are creating too many tickwheel Timer instances ({} "
                    "live, limit {}). Timer is a shared resource that must be "
                    "reused across the application, so that only a few "
                    "instances are created.",
                    live, limit.max_instances));
  }
  return absl::OkStatus();
}

void ReleaseInstanceSlot() {
  live_timers.fetch_sub(1, std::memory_order_relaxed);
}

void ResetInstanceWarningForTesting() {
  warned.store(false, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace tickwheel
