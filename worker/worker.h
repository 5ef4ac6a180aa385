// worker/worker.h
// -----------------------------------------------------------------------------
// Internal. The engine behind tickwheel::Timer: one dedicated thread, the
// lock-free queues it drains, the wheel it owns, and the protocol that lets
// newTimeout(), cancel(), reset(), cancelAll() and stop() race safely. Users
// include timer/timer.h; Timer forwards to this class. The code is in
// worker.cc (the loop), worker_schedule.cc (newTimeout's side) and
// worker_stop.cc (stop() and cancelAll()).
//
// The worker loop (Run). Each pass:
//   1. serve a cancelAll() request, if one waits, and drain the shards'
//      notice queues: unlink each node cancelled after it was armed, in O(1),
//      and drop it (cancel() already destroyed the task, so captures do not
//      live to the deadline); file each node that reset() moved earlier in
//      its new bucket;
//   2. move up to kSliceBudget nodes from the shards' lanes and queues into
//      the wheel, round-robin (never into a tick already processed), arming
//      each (CAS queued -> armed) or dropping it if it was cancelled while
//      queued; a node that was already due when the previous pass read the
//      clock, but still queued (the worker woke late, or a backlog took
//      longer than the tick), is expired at once instead, not a tick later;
//   3. advance the wheel to the last tick whose end the clock has passed,
//      expiring (or cascading) at most kSliceBudget nodes: each expired node
//      is claimed (armed -> expired: a CAS, or a plain store when no handle
//      is left to race with) and its task run or handed to the task
//      executor. A node whose deadline a reset() moved later is filed again
//      instead (lazily: the worker hears of a later deadline only when the
//      old one comes). A periodic node runs and goes back into the wheel at
//      its next run.
//   If a budget ran out, the next pass starts at once: a burst is worked off
//   in slices, with cancellations and new timeouts served in between, and
//   never waits for the next tick. Otherwise the worker sleeps until the end
//   of the tick of the wheel's next work (Wheel::NextWorkTick()), or
//   indefinitely when the wheel is empty: it does not wake every tick. One
//   exception, for housekeeping: after a pass that found new or cancelled
//   timeouts in the queues, it sleeps at most to the end of the current
//   tick, so that while traffic flows, cancelled nodes are released within
//   about a tick and the queues stay short; once traffic stops, so do these
//   wake-ups. Another, on the real clock only: when the node pool holds
//   freed memory beyond its floor, the worker wakes when that memory is due
//   to decay (worker/cell_pool.h), and a producer that leaves the pool short
//   of faulted-in memory wakes it to fault more in; at its floor the pool
//   asks for nothing. A worker that fell behind (a slow task, a suspended
//   process) processes every missed tick's work in order.
//
// Waking the worker (newTimeout vs a sleeping worker)
//   Before sleeping until the end of tick p, the worker stores in
//   `wake_limit_` the latest deadline that would be due before p (a clock
//   reading, seq_cst), then checks that the lanes and queues are still empty
//   (seq_cst); while awake it stores kAwake. newTimeout() publishes its node
//   (a seq_cst CAS or exchange), then loads `wake_limit_` (seq_cst): only if
//   its deadline is at or below the limit does it claim the wake-up with a
//   CAS and call Sleeper::Wake(). Either the worker sees the node or the
//   producer sees the plan (Dekker), so no timeout sleeps through its
//   deadline; and a newTimeout() due later than the planned wake-up, a
//   reset() to a later deadline, or any cancel() costs the sleeping worker
//   nothing. A reset() to an earlier deadline wakes it the same way.
//
// Stopping (newTimeout and cancel vs stop)
//   Each pending-count word (SharedTimerState, one per shard) holds a count
//   and a closed bit. newTimeout() reserves its slot and checks the bit in
//   one RMW before it pushes; a winning cancel() pushes on the notice queue
//   (if it must) before it gives its slot back (release). stop() sets the
//   bit in every word, joins the worker, then drains the wheel and all
//   queues until the counts sum to zero (acquire) and every lane is empty:
//   every newTimeout() that got a slot has pushed, and been returned; every
//   cancel() has pushed, and been released. It waits for kBusy on each node
//   it collects, so a reset() in progress finishes first. No accepted
//   timeout is lost, and nothing shared is touched after stop() returns.
//
// The fast lane (newTimeout + cancel, the request-timeout pattern)
//   Each shard has a bounded ring of node pointers (worker/lane.h, 16384
//   cells, taken on first use from type-stable memory, worker/lane_arrays.h)
//   in front of its pending queue. newTimeout() claims a cell and records its
//   address in the node's `next` (unused while the node is in a lane); when
//   the lane is full it pushes on the queue instead, and wakes the worker
//   (below). A cancel() that comes before the worker has popped the node
//   takes it back out of its cell (a CAS) and with it the worker's
//   reference: the worker then never touches the node, and the cancelling
//   thread frees it while its cache still holds it (a worker-side free would
//   make the producer's next allocation fetch the cell from the worker's
//   cache). The cell then goes back to the ring if it is still the lane's
//   last claimed one, and the worker never hears of the timeout; otherwise
//   it holds a tombstone. worker/timeout_node.h gives the protocol between a
//   take-back, the state and racing cancels. The worker pops the lane before
//   the queue, one snapshot of claimed cells per pass, and skips each
//   tombstone. Order: a thread's timeouts reach the wheel in the order it
//   scheduled them, except that after its lane overflowed into the queue,
//   later timeouts from the lane can be filed before the overflowed ones;
//   timeouts due in the same tick then run in that order.
//
// Bounded backlogs (the worker asleep while traffic flows)
//   Nothing due wakes a worker that sleeps toward a far deadline, so what
//   producers hand it must not wait for that deadline. Two bounds wake it,
//   whatever it planned: a newTimeout() that finds its lane full
//   (kLaneCapacity nodes, live or taken back) pushes on the queue and wakes
//   it, and the push whose node brings its shard's notice backlog to
//   kNoticeBacklogWake wakes it. So the cancelled nodes that wait for the
//   worker are bounded by a count per shard, not by the time to the next
//   deadline; once awake, the worker comes back at the end of each tick
//   while traffic flows (housekeeping, above) and sleeps for good once it
//   stops. Without traffic nothing wakes it.
//
// Periodic timeouts
//   One node for all runs. On the worker thread, a run takes the node out of
//   the wheel (kRunning) and puts it back at its next run afterwards; with a
//   task executor the node stays in the wheel at its next run, marked
//   kInFlight until the executor has run the task, and a run that comes due
//   while the previous one is still in flight is skipped. Runs are on the
//   grid deadline + k * period; runs missed by a whole period or more (a
//   slow task, a suspended process) are skipped, and the next is the first
//   grid time after the clock. Each run holds its own reference to the
//   task's callable, so a cancel() during a run cannot destroy it under the
//   run.
//
// Lifetime
//   Timer holds a shared_ptr to the Worker and so does the thread, so a Timer
//   destroyed from inside one of its own tasks can detach the thread, which
//   finishes the shutdown by itself. "Am I the worker?" (stop() from a task
//   must fail rather than wait for itself) is a thread-local marker set while
//   Run() runs, not a stored thread id, which a later thread may reuse.
//   Timeout handles hold only nodes; see worker/timeout_node.h for why
//   cancel() and reset() are safe against destruction.

#ifndef TICKWHEEL_WORKER_WORKER_H_
#define TICKWHEEL_WORKER_WORKER_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/base/deadline_spec.h"
#include "tickwheel/base/histogram.h"
#include "tickwheel/base/mapped_vector.h"
#include "tickwheel/base/mutex.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/base/time_source.h"
#include "tickwheel/worker/shared_state.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {

struct WorkerConfig {
  int64_t tick_nanos = 0;   // > 0
  int ticks_per_wheel = 0;  // a power of two
  // How late past its deadline a task may run (TimerOptions::slack), in
  // [0, tick_nanos]; tick_nanos: tasks run at tick ends.
  int64_t slack_nanos = 0;
  int64_t max_pending_timeouts = 0;
  std::string thread_name;
  std::function<void(absl::AnyInvocable<void()>)> task_executor;
  std::shared_ptr<TimeSource> clock;  // non-null
  // `clock` reads CLOCK_MONOTONIC (MonotonicNanos()): newTimeout() then
  // reads it inline, without a virtual call.
  bool monotonic_clock = false;
  // The facade's Timer, opaque here (SharedTimerState::owner).
  void* owner = nullptr;
};

// The worker's counters, for the facade's metrics. Each is exact, read with
// a relaxed load, so a snapshot taken while the worker runs may be a few
// events apart between counters.
struct WorkerCounters {
  int64_t pending = 0;
  int64_t expired = 0;
  int64_t cancelled = 0;
  int64_t ticks = 0;
  int64_t catch_up_ticks = 0;
  int64_t wakeups = 0;
  int64_t worst_lateness_nanos = 0;
};

class Worker final : public std::enable_shared_from_this<Worker>,
                     private BacklogWaker {
 public:
  // The most nodes one pass transfers, and the most it expires or cascades,
  // before it serves the queues again. Bounds the time a cancel() or an
  // urgent newTimeout() waits behind a burst (about 0.1 ms of work), without
  // making the burst wait for the next tick (Netty moves at most 100,000 new
  // timeouts per tick, so a burst of a million fires ten ticks late).
  static constexpr int kSliceBudget = 4096;
  // How often one pass may stop its wheel to file a moved timeout again
  // before it leaves the rest to the next pass (see Pass()).
  static constexpr int kMovedRestartsPerPass = 256;

  // Use std::make_shared: the thread keeps the Worker alive.
  explicit Worker(WorkerConfig config);
  ~Worker();

  // Timer::newTimeout, newTimeoutAt, newPeriodic, for a callable that is not
  // empty: `emplace` moves it from `callable` into the new node, once the
  // call cannot fail any more (so a failed call leaves it untouched). If
  // that throws, nothing is scheduled and the exception propagates. Starts
  // the thread on first use. Returns the node with one reference, the
  // handle's.
  absl::StatusOr<TimeoutNode*> Schedule(TaskEmplacer emplace, void* callable,
                                        DeadlineSpec when)
      ABSL_LOCKS_EXCLUDED(start_mu_, wake_mu_);

  // What stop() returns: a node and the deadline it was sorted by.
  struct Stopped {
    int64_t deadline;
    TimeoutNode* node;
  };
  using StoppedNodes = MappedVector<Stopped>;

  // Timer::stop: every node neither run nor cancelled (but for library
  // timeouts, whose tasks it destroys), earliest deadline first, each marked
  // kStopped and with the worker's reference, which the caller takes. In
  // mapped memory (base/mapped_vector.h), which leaves when it is freed.
  absl::StatusOr<StoppedNodes> Stop()
      ABSL_LOCKS_EXCLUDED(stop_mu_, start_mu_, wake_mu_, cancel_all_mu_);

  // What ~Timer does: stop, destroy the tasks of what stop returned. From the
  // worker thread itself (a task destroying its Timer), the thread is detached
  // and finishes the shutdown once the task returns.
  void Shutdown()
      ABSL_LOCKS_EXCLUDED(stop_mu_, start_mu_, wake_mu_, cancel_all_mu_);

  // Timer::cancelAll: cancels every timeout pending at the call and returns
  // how many. On the worker thread (from a task) it does the work itself;
  // from another thread it asks the worker and waits for the answer.
  int64_t CancelAll() ABSL_LOCKS_EXCLUDED(cancel_all_mu_, wake_mu_);

  int64_t pending() const {
    return std::max<int64_t>(0, shared_.SumCounts(std::memory_order_relaxed));
  }
  WorkerCounters Counters() const;
  // The lateness counters (one writer, the worker).
  const HistogramCounts& lateness() const { return lateness_; }
  bool OnWorkerThread() const;
  // The producer-side state that handles refer to.
  SharedTimerState* shared() { return &shared_; }
  int64_t NowNanos() const { return shared_.NowNanos(); }

 private:
  static constexpr int64_t kAwake = INT64_MIN;

  // Schedule()'s steps. Reserve: a pending slot, checking the closed bit
  // and max_pending_timeouts in the same RMW. Deadline: the clock reading
  // the timeout is due at, saturating. NewNode: the node with its task, or
  // an error with the slot given back. Publish: the lane or the queue, then
  // the wake-up if the worker sleeps past the deadline.
  absl::Status Reserve(std::atomic<int64_t>& count);
  int64_t Deadline(int64_t now, DeadlineSpec when) const;
  absl::StatusOr<TimeoutNode*> NewNode(TaskEmplacer emplace, void* callable,
                                       int64_t deadline, DeadlineSpec when,
                                       std::atomic<int64_t>& count);
  void Publish(TimeoutNode* node, int shard);
  absl::Status StartThread() ABSL_LOCKS_EXCLUDED(start_mu_);
  void Run() ABSL_LOCKS_EXCLUDED(wake_mu_, cancel_all_mu_);
  // One pass (steps 1-3 above); true when it finished all work that is due.
  // `now`: the clock reading it works to.
  bool Pass(int64_t now) ABSL_LOCKS_EXCLUDED(cancel_all_mu_);
  // Sleeps until the wheel's next work is due or a producer wakes us. Never
  // with wake_mu_ held: the producer's Wake() needs it.
  void Sleep() ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Wakes the worker from another thread.
  void WakeWorker() ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Wakes the worker if it sleeps, whatever it planned: the first caller
  // after it planned a sleep claims the wake-up (kAwake), later ones find it
  // claimed and return. For backlogs that must not wait for a deadline.
  void WakeForBacklog() override ABSL_LOCKS_EXCLUDED(wake_mu_);
  // WakeForBacklog() for the node pool (CellDepot::AddWaker()), when its
  // retained memory becomes due to decay.
  static void WakeForPool(void* self) ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Wakes the worker if it sleeps past `deadline` (a clock reading).
  void WakeIfSleepingPast(int64_t deadline) override
      ABSL_LOCKS_EXCLUDED(wake_mu_);
  // The two uses of sleeper_ without wake_mu_. Each is safe for the reason
  // given, which the analysis cannot see, so each is exempt from it.
  //
  // StartThread() installs the sleeper (or removes it when the thread cannot
  // start) with start_mu_ held but not wake_mu_, before any other thread can
  // reach it: a producer wakes only a worker that has planned a sleep
  // (wake_limit_ is kAwake until then), and stop() reads started_
  // under start_mu_ before it touches sleeper_.
  void SetSleeperBeforeStart(std::unique_ptr<TimeSource::Sleeper> sleeper)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(start_mu_) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    sleeper_ = std::move(sleeper);
  }
  // The worker sleeps without wake_mu_, since a Wake() must be able to take
  // it meanwhile. The sleeper cannot die under it: only the worker itself
  // (Run) or stop() after joining the worker destroys it.
  TimeSource::Sleeper& OwnSleeper() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return *sleeper_;
  }
  // Each returns true when its queue is drained, false when the slice budget
  // ran out first.
  bool ProcessNotices();
  bool TransferPending(int64_t now);
  // Files a node again by its deadline: a reset() moved it, or a periodic
  // run is over. `refile_` collects them while the wheel is being advanced
  // (Advance's callback must not insert), FlushRefiles() inserts them.
  void FlushRefiles();
  // With a slack below one tick: expires the nodes of the tick in progress
  // whose deadline the clock has reached, without waiting for the tick to
  // end. A node a reset() moved past `now` is filed again instead.
  bool ExpireWithinTick(int64_t now);
  // The clock reading to sleep until for the wheel's next work at tick
  // `next` (not kNever), and in *limit the latest deadline whose
  // newTimeout() or reset() must wake us.
  int64_t PlanWake(int64_t next, int64_t* limit);
  // Claims and runs `node` as part of tick `tick`: the bucket's, which
  // Advance() has made elapsed(), or an overdue node's own (ended) tick. The
  // tick is what metrics().ticks shows while the task runs; it may step back
  // below elapsed() for an overdue node.
  bool Expire(TimeoutNode* node, int64_t now, int64_t tick);
  // Per-bucket bookkeeping of Expire(): ticks_, and catch_up_ticks_ for a
  // tick whose expiry starts a full tick or more after its end.
  void NoteExpiringTick(int64_t tick, int64_t now);
  // Counts a run: expired_, the worst and the distribution of lateness.
  void NoteRun(int64_t lateness);
  // Drops the worker's reference to a node whose task has just run inline,
  // destroying the task's captures now; with `noticed`, the node is on a
  // notice queue, whose pop drops the reference instead.
  static void ReleaseAfterRun(TimeoutNode* node, bool noticed);
  // Runs the task of `node` (the worker's reference lent), logging what it
  // throws.
  void CallTask(TimeoutNode* node);
  void RunTask(TimeoutNode* node, bool noticed);
  // RunTask() with a task_executor: hands the call over, with the worker's
  // reference. Out of line: the common path has no executor.
  [[gnu::noinline]] void HandToExecutor(TimeoutNode* node);
  // A periodic node, claimed for its run due at `due`: runs it (inline, or
  // handed to the executor) and files it again at its next run.
  [[gnu::noinline]] void RunPeriodic(TimeoutNode* node, int64_t due,
                                     int64_t now);
  // The next run of a periodic node whose run was due at `due`: the first
  // grid time due + k * period after `now`, saturating.
  static int64_t NextRun(int64_t due, int64_t period, int64_t now);
  // The clock reading at which tick `tick` ends (saturating).
  int64_t TickEnd(int64_t tick) const {
    return SaturatingAdd(start_nanos_,
                         SaturatingMul(tick + 1, config_.tick_nanos));
  }
  // The worker's reference to a node it found cancelled: dropped now, unless
  // the node is on a notice queue (kNoticed), whose pop drops it.
  static void DropCancelled(TimeoutNode* node, uint32_t word);
  // cancelAll() on the worker thread: cancels every pending node it can
  // reach (lanes, queues, the wheel, the nodes waiting to be filed again,
  // the periodic node of the task that calls it) and returns how many.
  int64_t CancelAllHere();
  // Serves the cancelAll() requests of other threads.
  void ServeCancelAll() ABSL_LOCKS_EXCLUDED(cancel_all_mu_);
  // Removes from the wheel the nodes cancelAll() left there (cancelled, not
  // on a notice queue) and drops them.
  void PurgeCancelled();
  // Called once the worker has exited, by the one thread that finishes the
  // shutdown: returns every pending node, marked stopped, earliest deadline
  // first, with the worker's reference.
  StoppedNodes CollectUnprocessed();
  // Destroys the task of a stopped node, unrun, and drops its reference.
  static void DiscardStopped(TimeoutNode* node);
  // Gives back slots taken by the worker's own expiries and stops.
  void Release(int64_t slots) {
    std::atomic<int64_t>& word = shared_.WorkerReleaseWord();
    if (shared_.limited) {  // shards[0], which producers share
      word.fetch_sub(slots * SharedTimerState::kOne, std::memory_order_release);
      return;
    }
    // worker_word has one writer at a time: the worker thread, then the
    // thread that stops the timer after joining it. No RMW needed.
    word.store(
        word.load(std::memory_order_relaxed) - slots * SharedTimerState::kOne,
        std::memory_order_release);
  }
  // Sets the closed bit in every count word; true if this call set it first.
  bool Close();
  bool QueuesEmpty() const;
  bool NoticeQueuesEmpty() const;
  // True when no lane holds a claimed cell: every published node popped,
  // every taken-back cell settled. Consumer only.
  bool LanesEmpty() const;
  // The next new node of `shard`: its fast lane first, then its queue;
  // nullptr when neither has one ready.
  TimeoutNode* PopNew(SharedTimerState::Shard& shard);
  static void Bump(std::atomic<int64_t>& counter, int64_t by = 1) {
    // Single writer (the worker): a load and a store, no RMW needed.
    counter.store(counter.load(std::memory_order_relaxed) + by,
                  std::memory_order_relaxed);
  }
  // Nanoseconds after startTime of a clock reading, saturating.
  int64_t Rel(int64_t clock_reading) const {
    return SaturatingSub(clock_reading, start_nanos_);
  }

  const WorkerConfig config_;
  // The slack is below one tick: the worker wakes for deadlines, not for
  // tick ends (ExpireWithinTick(), PlanWake()).
  const bool within_tick_ = config_.slack_nanos < config_.tick_nanos;
  SharedTimerState shared_;
  // Deadlines (clock readings) at or below this must wake the sleeping
  // worker: the end of the tick before the one it plans to wake for;
  // kAwake while it runs or once a producer has claimed the wake-up;
  // INT64_MAX while it sleeps with an empty wheel.
  alignas(64) std::atomic<int64_t> wake_limit_{kAwake};

  // Lock order: stop_mu_, then one of start_mu_, wake_mu_ and cancel_all_mu_
  // (never two of them at once).
  //
  // Start-up. start_mu_ serialises StartThread() and makes its check of the
  // closed bit atomic with stop()'s read of started_: either stop() sees the
  // thread started and joins it, or the thread never starts. No field is
  // ABSL_GUARDED_BY(start_mu_), since none is only ever touched under it:
  // started_ is written under it but read without it by newTimeout()
  // (acquire, pairing with the release store); start_nanos_ is published
  // through start_ready_ and started_; thread_ is written once under it,
  // before started_, then joined or detached only by the stop() or Shutdown()
  // that set the closed bit.
  Mutex start_mu_;
  std::atomic<bool> started_{false};
  std::atomic<bool> start_ready_{false};  // set by the worker thread
  int64_t start_nanos_ = 0;               // clock reading at startTime
  std::thread thread_;
  // The worker's sleeper. Producers may still be about to Wake() it after
  // stop() has collected their node, so it dies under wake_mu_, and every
  // Wake() from another thread (rare: only an earlier deadline) takes it.
  // Two deliberate exceptions: SetSleeperBeforeStart() and OwnSleeper().
  Mutex wake_mu_;
  std::unique_ptr<TimeSource::Sleeper> sleeper_ ABSL_GUARDED_BY(wake_mu_);

  // Serialises stop() and Shutdown(): a second stop() returns only once the
  // first has finished. It guards no field: the one call that sets the
  // closed bit owns the shutdown; the others then find the bit set and
  // return.
  Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(start_mu_, wake_mu_);
  std::atomic<bool> shutdown_{false};
  bool finish_on_thread_ = false;  // set before shutdown_ (release)

  // cancelAll() requests from other threads: tickets handed out and served
  // in order; `cancel_all_waiting_` lets a pass skip the mutex when none is.
  Mutex cancel_all_mu_;
  std::condition_variable_any cancel_all_cv_;
  int64_t cancel_all_requested_ ABSL_GUARDED_BY(cancel_all_mu_) = 0;
  int64_t cancel_all_served_ ABSL_GUARDED_BY(cancel_all_mu_) = 0;
  // The count each served ticket cancelled, until its caller takes it.
  std::vector<std::pair<int64_t, int64_t>> cancel_all_results_
      ABSL_GUARDED_BY(cancel_all_mu_);
  std::atomic<bool> cancel_all_waiting_{false};

  // Worker-only.
  Wheel wheel_;
  std::vector<TimeoutNode*> refile_;         // see FlushRefiles()
  TimeoutNode* running_periodic_ = nullptr;  // its task is running inline
  bool purge_ = false;          // cancelAll() left cancelled nodes in the wheel
  int64_t expiring_tick_ = -1;  // the tick Expire() last saw (bookkeeping)
  // The clock reading of the last Advance(); none yet: nothing is overdue.
  int64_t last_advance_now_ = INT64_MIN;
  // While Advance() runs, the last tick it will process; INT64_MIN
  // otherwise. A node that reset() moved to a tick at or before it ends the
  // slice, so that it is filed again before the wheel gets there.
  int64_t advance_last_tick_ = INT64_MIN;
  bool refiled_within_pass_ = false;  // Expire() stopped the wheel for it
  bool queue_traffic_ = false;        // the last pass popped from a queue
  int next_shard_ = 0;                // where TransferPending starts next

  // Written by the worker only (Bump), read by Counters().
  std::atomic<int64_t> expired_{0};
  std::atomic<int64_t> cancelled_by_all_{0};
  std::atomic<int64_t> ticks_{0};
  std::atomic<int64_t> catch_up_ticks_{0};
  std::atomic<int64_t> wakeups_{0};
  HistogramCounts lateness_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WORKER_H_
