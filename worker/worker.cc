#include "worker/worker.h"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <system_error>
#include <typeinfo>
#include <utility>

#include <fmt/format.h>

#include "timer/log.h"

namespace tickwheel::internal {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  // Both operands are non-negative here.
  return b > INT64_MAX - a ? INT64_MAX : a + b;
}

}  // namespace

Worker::Worker(WorkerConfig config, Timer* owner)
    : config_(std::move(config)), wheel_(config_.ticks_per_wheel) {
  shared_.owner.store(owner, std::memory_order_relaxed);
}

Worker::~Worker() {
  // Reached after Shutdown(): the thread is joined, or detached and finished.
  if (thread_.joinable()) thread_.detach();
}

bool Worker::OnWorkerThread() const {
  return worker_id_.load(std::memory_order_acquire) ==
         std::this_thread::get_id();
}

absl::StatusOr<Timeout> Worker::Schedule(TimerTask task,
                                         absl::Duration delay) {
  if (!task) {
    return absl::InvalidArgumentError(
        "newTimeout: the task is empty; pass a callable");
  }
  if (gate_.fetch_add(2, std::memory_order_acq_rel) & 1) {
    LeaveGate();
    return absl::FailedPreconditionError(
        "newTimeout: the timer has been stopped; create a new Timer");
  }

  // Reserve a pending slot. With a limit, a CAS loop so that the count never
  // exceeds it, not even for an instant.
  const int64_t max = config_.max_pending_timeouts;
  if (max > 0) {
    int64_t count = shared_.pending.load(std::memory_order_relaxed);
    do {
      if (count >= max) {
        LeaveGate();
        return absl::ResourceExhaustedError(fmt::format(
            "newTimeout: number of pending timeouts ({}) would exceed "
            "max_pending_timeouts ({}); cancel timeouts you no longer need or "
            "raise the limit",
            count + 1, max));
      }
    } while (!shared_.pending.compare_exchange_weak(
        count, count + 1, std::memory_order_relaxed));
  } else {
    shared_.pending.fetch_add(1, std::memory_order_relaxed);
  }

  if (!started_.load(std::memory_order_acquire)) {
    if (absl::Status s = StartThread(); !s.ok()) {
      shared_.pending.fetch_sub(1, std::memory_order_relaxed);
      LeaveGate();
      return s;
    }
  }

  // Deadlines count from startTime, so they stay small and exact; a huge
  // delay saturates at INT64_MAX nanoseconds (292 years) instead of wrapping
  // into the past.
  const int64_t delay_nanos =
      std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay));
  const int64_t elapsed = config_.clock->NowNanos() - start_nanos_;
  auto* node = new TimeoutNode;
  node->refs.store(2, std::memory_order_relaxed);  // handle + worker
  node->shared = &shared_;
  node->task = std::move(task);
  node->deadline = SaturatingAdd(std::max<int64_t>(0, elapsed), delay_nanos);
  pending_queue_.Push(node);
  LeaveGate();
  return TimeoutAccess::Adopt(node);
}

absl::Status Worker::StartThread() {
  std::lock_guard<std::mutex> lock(start_mu_);
  if (started_.load(std::memory_order_relaxed)) return absl::OkStatus();
  sleeper_ = config_.clock->NewSleeper();
  try {
    thread_ = std::thread([self = shared_from_this()] { self->Run(); });
  } catch (const std::system_error& e) {
    sleeper_.reset();
    return absl::ResourceExhaustedError(
        fmt::format("newTimeout: cannot start the worker thread: {}", e.what()));
  }
  // newTimeout() must not compute a deadline before startTime exists.
  start_ready_.wait(false, std::memory_order_acquire);
  started_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void Worker::Run() {
  {
    std::string name = config_.thread_name.substr(0, 15);
    pthread_setname_np(pthread_self(), name.c_str());
  }
  worker_id_.store(std::this_thread::get_id(), std::memory_order_release);
  start_nanos_ = config_.clock->NowNanos();
  start_ready_.store(true, std::memory_order_release);
  start_ready_.notify_all();

  const int64_t tick_nanos = config_.tick_nanos;
  for (int64_t tick = 0;; ++tick) {
    // End of tick `tick`, relative to startTime; saturates for absurd uptimes.
    const int64_t tick_end = tick >= INT64_MAX / tick_nanos - 1
                                 ? INT64_MAX
                                 : (tick + 1) * tick_nanos;
    const int64_t now = AwaitTickEnd(tick_end);
    if (now < 0) break;  // stopping
    ProcessCancelled();
    TransferPending(tick);
    ExpireTick(tick, now);
    Bump(ticks_);
  }
  if (finish_on_thread_) {
    // The Timer was destroyed from one of its own tasks; nobody will join us.
    for (Timeout& t : CollectUnprocessed()) t.takeTask();
    sleeper_.reset();
  }
}

int64_t Worker::AwaitTickEnd(int64_t tick_end) {
  if (shutdown_.load(std::memory_order_acquire)) return -1;
  int64_t now = config_.clock->NowNanos() - start_nanos_;
  if (now >= tick_end) {
    if (now - tick_end >= config_.tick_nanos) Bump(catch_up_ticks_);
    return now;
  }
  do {
    sleeper_->SleepUntil(SaturatingAdd(start_nanos_, tick_end));
    Bump(wakeups_);
    if (shutdown_.load(std::memory_order_acquire)) return -1;
    now = config_.clock->NowNanos() - start_nanos_;
  } while (now < tick_end);
  return now;
}

void Worker::DiscardCancelled(TimeoutNode* node) {
  node->AwaitCancelled();
  node->task = nullptr;
  node->Unref();
}

void Worker::ProcessCancelled() {
  while (TimeoutNode* node = shared_.cancelled.Pop()) {
    node->AwaitCancelled();
    if (node->in_bucket) {
      wheel_.Remove(node);
      node->Unref();  // the worker's reference
    }
    // Otherwise the node is still in the pending queue (TransferPending drops
    // the worker's reference) or ExpireTick already dropped it.
    node->task = nullptr;
    Bump(cancelled_);
    node->Unref();  // the cancellation queue's reference
  }
}

void Worker::TransferPending(int64_t tick) {
  for (int i = 0; i < kMaxTransfersPerTick; ++i) {
    TimeoutNode* node = pending_queue_.Pop();
    if (node == nullptr) return;
    if (node->state.load(std::memory_order_acquire) != TimeoutState::kPending) {
      DiscardCancelled(node);
      continue;
    }
    wheel_.Insert(node, Wheel::DueTick(node->deadline, config_.tick_nanos),
                  tick);
  }
}

void Worker::ExpireTick(int64_t tick, int64_t now_since_start) {
  wheel_.ExpireTick(tick, [&](TimeoutNode* node) {
    TimeoutState expected = TimeoutState::kPending;
    if (!node->state.compare_exchange_strong(expected, TimeoutState::kExpired,
                                             std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      DiscardCancelled(node);  // lost to a cancel() since the last drain
      return true;
    }
    shared_.pending.fetch_sub(1, std::memory_order_relaxed);
    Bump(expired_);
    const int64_t lateness = now_since_start - node->deadline;
    if (lateness > worst_lateness_nanos_.load(std::memory_order_relaxed)) {
      worst_lateness_nanos_.store(lateness, std::memory_order_relaxed);
    }
    RunTask(node);
    // A stop() or a destroying task ends the walk here; the rest of the bucket
    // is returned by stop().
    return !shutdown_.load(std::memory_order_acquire);
  });
}

void Worker::InvokeTask(const Timeout& timeout) {
  TimeoutNode* node = TimeoutAccess::Node(timeout);
  try {
    node->task(timeout);
  } catch (const std::exception& e) {
    Log(LogSeverity::kError,
        fmt::format("a timer task threw {}: {}; the worker goes on",
                    typeid(e).name(), e.what()));
  } catch (...) {
    Log(LogSeverity::kError,
        "a timer task threw a non-std::exception; the worker goes on");
  }
  node->task = nullptr;  // captures die with the run, not with the handles
}

void Worker::RunTask(TimeoutNode* node) {
  Timeout timeout = TimeoutAccess::Adopt(node);  // takes the worker reference
  if (!config_.task_executor) {
    InvokeTask(timeout);
    return;
  }
  try {
    config_.task_executor(
        [timeout = std::move(timeout)]() { InvokeTask(timeout); });
  } catch (const std::exception& e) {
    Log(LogSeverity::kError,
        fmt::format("the task_executor threw {}: {}; that task did not run",
                    typeid(e).name(), e.what()));
  } catch (...) {
    Log(LogSeverity::kError,
        "the task_executor threw a non-std::exception; that task did not run");
  }
}

std::vector<Timeout> Worker::CollectUnprocessed() {
  std::vector<Timeout> result;
  result.reserve(static_cast<size_t>(wheel_.size()));
  auto take = [&](TimeoutNode* node) {
    TimeoutState expected = TimeoutState::kPending;
    if (node->state.compare_exchange_strong(expected, TimeoutState::kStopped,
                                            std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
      shared_.pending.fetch_sub(1, std::memory_order_relaxed);
      result.push_back(TimeoutAccess::Adopt(node));
    } else {
      DiscardCancelled(node);
    }
  };
  wheel_.DrainAll(take);
  while (TimeoutNode* node = pending_queue_.Pop()) take(node);
  // Every cancel() that won a node has finished (take() waited for it), so the
  // cancellation queue is complete; release what it holds.
  ProcessCancelled();
  // Earliest deadline first: the order in which they would have run.
  std::stable_sort(result.begin(), result.end(),
                   [](const Timeout& a, const Timeout& b) {
                     return TimeoutAccess::Node(a)->deadline <
                            TimeoutAccess::Node(b)->deadline;
                   });
  return result;
}

absl::StatusOr<std::vector<Timeout>> Worker::Stop() {
  if (OnWorkerThread()) {
    return absl::FailedPreconditionError(
        "stop: called from the timer's own worker thread (inside a task, or a "
        "task_executor that runs tasks inline); call stop() from another "
        "thread");
  }
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (gate_.fetch_or(1, std::memory_order_acq_rel) & 1) {
    return std::vector<Timeout>();  // already stopped
  }
  while ((gate_.load(std::memory_order_acquire) >> 1) != 0) {
    std::this_thread::yield();  // a newTimeout() is finishing its push
  }
  if (!started_.load(std::memory_order_acquire)) {
    return std::vector<Timeout>();  // never scheduled anything, no thread
  }
  shutdown_.store(true, std::memory_order_release);
  sleeper_->Wake();
  thread_.join();
  std::vector<Timeout> unprocessed = CollectUnprocessed();
  sleeper_.reset();  // unregisters from a ManualClock
  return unprocessed;
}

void Worker::Shutdown() {
  if (!OnWorkerThread()) {
    absl::StatusOr<std::vector<Timeout>> unprocessed = Stop();
    if (unprocessed.ok()) {
      for (Timeout& t : *unprocessed) t.takeTask();  // destroyed, never run
    }
    return;
  }
  // Destroyed from inside one of our own tasks: we cannot join ourselves.
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (gate_.fetch_or(1, std::memory_order_acq_rel) & 1) return;
  while ((gate_.load(std::memory_order_acquire) >> 1) != 0) {
    std::this_thread::yield();
  }
  finish_on_thread_ = true;
  shared_.owner.store(nullptr, std::memory_order_relaxed);
  shutdown_.store(true, std::memory_order_release);
  thread_.detach();
}

TimerMetrics Worker::Metrics() const {
  TimerMetrics m;
  m.pending = pending();
  m.expired = expired_.load(std::memory_order_relaxed);
  m.cancelled = cancelled_.load(std::memory_order_relaxed);
  m.ticks = ticks_.load(std::memory_order_relaxed);
  m.catch_up_ticks = catch_up_ticks_.load(std::memory_order_relaxed);
  m.wakeups = wakeups_.load(std::memory_order_relaxed);
  m.worst_lateness =
      absl::Nanoseconds(worst_lateness_nanos_.load(std::memory_order_relaxed));
  return m;
}

}  // namespace tickwheel::internal
