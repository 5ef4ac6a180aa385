// The LocalTimer facade: options checked, nodes wrapped in handles, the
// engine's plan as a poll timeout. The engine is worker/local_engine.h.

#include "tickwheel/timer/local_timer.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/timer/internal/engine_bridge.h"
#include "tickwheel/worker/local_engine.h"

namespace tickwheel {

LocalTimer::LocalTimer(std::unique_ptr<internal::LocalEngine> engine,
                       absl::Duration tick, int ticks_per_wheel,
                       absl::Duration slack, std::thread::id owner)
    : engine_(std::move(engine)),
      tick_duration_(tick),
      ticks_per_wheel_(ticks_per_wheel),
      slack_(slack),
      owner_(owner) {}

absl::StatusOr<std::unique_ptr<LocalTimer>> LocalTimer::Create(
    LocalTimerOptions options) {
  absl::StatusOr<internal::CheckedShape> shape = internal::CheckShape(
      options.tick_duration, options.ticks_per_wheel, options.slack);
  if (!shape.ok()) return shape.status();
  internal::LocalEngineConfig config;
  config.shape = {.tick_nanos = shape->tick_nanos,
                  .ticks_per_wheel = shape->ticks_per_wheel,
                  .slack_nanos = shape->slack_nanos};
  config.max_pending_timeouts = options.max_pending_timeouts;
  config.clock =
      internal::ResolveClock(std::move(options.clock), &config.monotonic_clock);
  std::unique_ptr<internal::LocalEngine> engine;
  try {
    engine = std::make_unique<internal::LocalEngine>(std::move(config));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(fmt::format(
        "not enough memory for a wheel of {} buckets", shape->ticks_per_wheel));
  }
  return std::unique_ptr<LocalTimer>(
      new LocalTimer(std::move(engine), absl::Nanoseconds(shape->tick_nanos),
                     shape->ticks_per_wheel,
                     absl::Nanoseconds(shape->slack_nanos), options.owner));
}

LocalTimer::~LocalTimer() {
  // Before the engine goes: a sleep ended here resumes its coroutine, which
  // may still call this timer (and find it stopped).
  engine_->Shutdown();
}

bool LocalTimer::OnOwnerThread() const {
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id owner = owner_.load(std::memory_order_relaxed);
  if (owner == me) return true;  // the steady state: one compare
  if (owner != std::thread::id()) return false;
  // Unbound: the first owner-only call binds it; of two first calls on two
  // threads exactly one CAS wins, and the other sees the winner's id.
  return owner_.compare_exchange_strong(owner, me, std::memory_order_relaxed) ||
         owner == me;
}

void LocalTimer::CheckOwner(const char* call) const {
  if (OnOwnerThread()) return;
  std::ostringstream ids;
  ids << "called on thread " << std::this_thread::get_id()
      << ", its owner is thread " << owner_.load(std::memory_order_relaxed);
  std::fprintf(stderr,
               "tickwheel: LocalTimer::%s() %s (an owner-only call: run it on "
               "the owner's loop, or name the owner with "
               "LocalTimerOptions::owner)\n",
               call, ids.str().c_str());
  std::abort();
}

bool LocalTimer::isOwnerThread() const {
  return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
}

std::thread::id LocalTimer::ownerThread() const {
  return owner_.load(std::memory_order_relaxed);
}

absl::StatusOr<Timeout> LocalTimer::Schedule(
    internal::TaskEmplacer emplace, void* callable,
    const internal::DeadlineSpec& when) {
  if (!OnOwnerThread()) {
    std::ostringstream ids;
    ids << "LocalTimer: a timeout scheduled on thread "
        << std::this_thread::get_id() << ", but its owner is thread "
        << owner_.load(std::memory_order_relaxed)
        << "; schedule from the owner's loop (post the call there), or name "
           "the owner with LocalTimerOptions::owner";
    return absl::PermissionDeniedError(ids.str());
  }
  absl::StatusOr<internal::TimeoutNode*> node =
      engine_->Schedule(emplace, callable, when);
  if (!node.ok()) return node.status();
  return internal::TimeoutAccess::Adopt(*node, engine_->shared());
}

void LocalTimer::ExpediteSleep(const Timeout& timeout) {
  engine_->Expedite(internal::TimeoutAccess::Node(timeout));
}

int64_t LocalTimer::advance() {
  CheckOwner("advance");
  return engine_->Advance();
}

std::optional<TimePoint> LocalTimer::nextWakeup() const {
  CheckOwner("nextWakeup");
  const int64_t wake = engine_->NextWakeupNanos();
  if (wake == INT64_MAX) return std::nullopt;
  return TimePoint(std::chrono::nanoseconds(wake));
}

int LocalTimer::pollTimeoutMs() const {
  CheckOwner("pollTimeoutMs");
  const int64_t wake = engine_->NextWakeupNanos();
  if (wake == INT64_MAX) return -1;
  const int64_t wait = internal::SaturatingSub(wake, engine_->NowNanos());
  if (wait <= 0) return 0;
  // Rounded up: a poll that returns before the wake-up finds nothing due.
  constexpr int64_t kNanosPerMs = 1'000'000;
  const int64_t ms = wait / kNanosPerMs + (wait % kNanosPerMs != 0 ? 1 : 0);
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

int64_t LocalTimer::cancelAll() {
  CheckOwner("cancelAll");
  return engine_->CancelAll();
}

std::vector<Timeout> LocalTimer::stop() {
  CheckOwner("stop");
  internal::Sweeper::StoppedNodes nodes = engine_->Stop();
  std::vector<Timeout> result;
  result.reserve(nodes.size());
  for (const internal::Sweeper::Stopped& s : nodes) {
    result.push_back(internal::TimeoutAccess::Adopt(s.node, engine_->shared()));
  }
  return result;
}

int64_t LocalTimer::pendingTimeouts() const { return engine_->pending(); }

TimePoint LocalTimer::now() const {
  return TimePoint(std::chrono::nanoseconds(engine_->NowNanos()));
}

TimerMetrics LocalTimer::metrics() const {
  return internal::MetricsFrom(engine_->counters(), engine_->pending(),
                               engine_->CancelCalls());
}

}  // namespace tickwheel
