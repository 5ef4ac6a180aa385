// worker/worker.h
// -----------------------------------------------------------------------------
// Internal. The engine behind tickwheel::Timer: one dedicated thread, the
// lock-free pending queue it drains, the wheel it owns, and the protocol that
// lets newTimeout(), cancel() and stop() race safely. Users include
// timer/timer.h; Timer forwards to this class.
//
// The worker loop (Run), once per tick k:
//   1. sleep until the end of tick k, startTime + (k + 1) * tick (skipped when
//      the worker is behind: every missed tick is processed, in order);
//   2. drain the cancellation queue: unlink each cancelled node from its bucket
//      in O(1) and destroy its task, so captures do not live to the deadline;
//   3. move at most kMaxTransfersPerTick nodes from the pending queue into the
//      wheel (never into a tick already processed);
//   4. expire the bucket of tick k: claim each due node (CAS pending ->
//      expired) and run its task, or hand it to the task executor.
// Everything the loop touches except the two queues, `state` and the
// counters is worker-only. Sleeping goes through Clock::Sleeper, so a
// ManualClock makes the loop deterministic, and so that the loop can later
// sleep until the next non-empty tick instead of every tick: Sleeper::Wake()
// is already the way to interrupt a sleep.
//
// The gate (newTimeout vs stop)
//   `gate_` packs a "closed" bit (bit 0) and the number of newTimeout() calls
//   in flight (the rest). newTimeout() adds 2 (acq_rel), backs out if the bit
//   is set, pushes, and subtracts 2 (release). stop() sets the bit and waits
//   for the count to reach zero (acquire). All of this is one atomic variable,
//   so its modification order decides each race: a newTimeout() that entered
//   before the bit was set has finished its push before stop() proceeds (and
//   its node is returned by stop()), and one that entered after fails with
//   FailedPrecondition. No accepted timeout is ever lost.
//
// Lifetime
//   Timer holds a shared_ptr to the Worker and so does the thread, so a Timer
//   destroyed from inside one of its own tasks can detach the thread, which
//   finishes the shutdown by itself. Timeout handles hold only nodes; see
//   timer/timeout_node.h for why cancel() is safe against destruction.

#ifndef TICKWHEEL_WORKER_WORKER_H_
#define TICKWHEEL_WORKER_WORKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "timer/metrics.h"
#include "timer/timeout.h"
#include "timer/timeout_node.h"
#include "timer/wheel.h"
#include "worker/clock.h"

namespace tickwheel::internal {

struct WorkerConfig {
  int64_t tick_nanos = 0;   // > 0
  int ticks_per_wheel = 0;  // a power of two
  int64_t max_pending_timeouts = 0;
  std::string thread_name;
  std::function<void(absl::AnyInvocable<void()>)> task_executor;
  std::shared_ptr<Clock> clock;  // non-null
};

class Worker : public std::enable_shared_from_this<Worker> {
 public:
  // Netty's bound on how many new timeouts one tick moves into the wheel, so
  // that a flood of newTimeout() calls cannot stall expiry.
  static constexpr int kMaxTransfersPerTick = 100000;

  // Use std::make_shared: the thread keeps the Worker alive.
  Worker(WorkerConfig config, Timer* owner);
  ~Worker();

  // Timer::newTimeout. Starts the thread on first use.
  absl::StatusOr<Timeout> Schedule(TimerTask task, absl::Duration delay);

  // Timer::stop.
  absl::StatusOr<std::vector<Timeout>> Stop();

  // What ~Timer does: stop, destroy the tasks of what stop returned. From the
  // worker thread itself (a task destroying its Timer), the thread is detached
  // and finishes the shutdown once the task returns.
  void Shutdown();

  int64_t pending() const {
    return shared_.pending.load(std::memory_order_relaxed);
  }
  TimerMetrics Metrics() const;
  bool OnWorkerThread() const;

 private:
  absl::Status StartThread();
  void Run();
  // Sleeps until `tick_end` (nanoseconds after startTime); returns the time
  // then, or -1 once the timer is stopping.
  int64_t AwaitTickEnd(int64_t tick_end);
  void ProcessCancelled();
  void TransferPending(int64_t tick);
  void ExpireTick(int64_t tick, int64_t now_since_start);
  void RunTask(TimeoutNode* node);
  std::vector<Timeout> CollectUnprocessed();
  // Drops the worker's reference to a node that lost to cancel().
  static void DiscardCancelled(TimeoutNode* node);
  static void InvokeTask(const Timeout& timeout);
  void LeaveGate() { gate_.fetch_sub(2, std::memory_order_release); }
  static void Bump(std::atomic<int64_t>& counter, int64_t by = 1) {
    // Single writer (the worker): a load and a store, no RMW needed.
    counter.store(counter.load(std::memory_order_relaxed) + by,
                  std::memory_order_relaxed);
  }

  const WorkerConfig config_;
  SharedTimerState shared_;

  alignas(64) std::atomic<uint64_t> gate_{0};
  PendingQueue pending_queue_;

  // Start-up: guarded by start_mu_; started_ and start_nanos_ are published
  // with release/acquire through started_.
  std::mutex start_mu_;
  std::atomic<bool> started_{false};
  std::atomic<bool> start_ready_{false};  // set by the worker thread
  int64_t start_nanos_ = 0;               // clock reading at startTime
  std::thread thread_;
  std::atomic<std::thread::id> worker_id_{};
  std::unique_ptr<Clock::Sleeper> sleeper_;

  std::mutex stop_mu_;  // serialises stop() calls
  std::atomic<bool> shutdown_{false};
  bool finish_on_thread_ = false;  // set before shutdown_ (release)

  // Worker-only.
  Wheel wheel_;

  // Written by the worker only (Bump), read by Metrics().
  std::atomic<int64_t> expired_{0};
  std::atomic<int64_t> cancelled_{0};
  std::atomic<int64_t> ticks_{0};
  std::atomic<int64_t> catch_up_ticks_{0};
  std::atomic<int64_t> wakeups_{0};
  std::atomic<int64_t> worst_lateness_nanos_{0};
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WORKER_H_
