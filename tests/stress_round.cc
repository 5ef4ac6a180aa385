#include "tests/stress_round.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::stress {
namespace {

int64_t NowNanos() { return RealClock::Shared()->NowNanos(); }

// The id of the last task Capture destroyed on this thread.
thread_local int64_t last_destroyed_id = -1;

uint64_t Mix(uint64_t x) {  // splitmix64: per-task randomness without sharing
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A task executor with one thread and a FIFO queue; Finish() runs what is
// left and joins.
class QueueExecutor {
 public:
  QueueExecutor() : thread_([this] { Loop(); }) {}
  ~QueueExecutor() { Finish(); }

  void Post(absl::AnyInvocable<void()> f) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(f));
    cv_.notify_one();
  }

  void Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done_
      absl::AnyInvocable<void()> f = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      f();
      f = nullptr;
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> queue_;
  bool done_ = false;
  std::thread thread_;
};

class StressRound {
 public:
  explicit StressRound(const StressParams& p)
      : p_(p),
        capacity_(static_cast<int64_t>(p.producers) * p.ops_per_producer * 4),
        entries_(new Entry[capacity_]) {}

  StressCounts Run() {
    StartTimer();
    std::vector<Timeout> stopped = RaceProducersAndStoppers();
    if (executor_ != nullptr) executor_->Finish();  // tasks already handed off
    EXPECT_EQ(timer_->pendingTimeouts(), 0);
    EXPECT_EQ(pending_violation_.load(), 0)
        << "pendingTimeouts() exceeded max_pending_timeouts=" << p_.max_pending;
    const std::vector<int> in_stop = TakeBackStopped(std::move(stopped));
    timer_.reset();
    {
      std::lock_guard<std::mutex> lock(ring_mu_);
      ring_.clear();
    }
    StressCounts counts =
        CheckLedger(entries_.get(), std::min(next_id_.load(), capacity_),
                    in_stop, cancelled_by_all_.load());
    counts.operations = ops_done_.load() + task_actions_.load();
    counts.from_tasks = from_tasks_.load();
    return counts;
  }

 private:
  // Counts its destruction in the task's entry, and names the task to the
  // thread that destroys it (last_destroyed_id).
  class Capture {
   public:
    Capture(StressRound* round, int64_t id) : round_(round), id_(id) {}
    Capture(Capture&& o) noexcept
        : round_(std::exchange(o.round_, nullptr)), id_(o.id_) {}
    Capture& operator=(Capture&&) = delete;
    ~Capture() {
      if (round_ == nullptr) return;
      round_->entries_[id_].destroyed.fetch_add(1);
      last_destroyed_id = id_;
    }

   private:
    StressRound* round_;
    int64_t id_;
  };

  // One handle object per accepted timeout, and its task's id.
  using Shared = std::pair<std::shared_ptr<const Timeout>, int64_t>;

  void StartTimer() {
    if (p_.use_executor) executor_ = std::make_unique<QueueExecutor>();
    TimerOptions options;
    options.tick_duration = absl::Milliseconds(1);
    options.ticks_per_wheel = 64;
    options.max_pending_timeouts = p_.max_pending;
    options.thread_name = "stress";
    if (executor_ != nullptr) {
      QueueExecutor* ex = executor_.get();
      options.task_executor = [ex](absl::AnyInvocable<void()> f) {
        ex->Post(std::move(f));
      };
    }
    timer_ = Timer::Create(std::move(options)).value();
  }

  // Runs the producers, the stoppers and (with a limit) an observer of
  // pendingTimeouts() until all are done; returns what stop() returned.
  std::vector<Timeout> RaceProducersAndStoppers() {
    std::mt19937 rng(p_.seed);
    const int64_t total_ops = int64_t{p_.producers} * p_.ops_per_producer;
    // Usually in the second half; one round in eight almost at once; some
    // after the producers are done.
    const int64_t stop_after =
        rng() % 8 == 0
            ? static_cast<int64_t>(rng() % 64)
            : total_ops / 2 +
                  static_cast<int64_t>(rng() % (total_ops * 3 / 4 + 1));
    const int pause_us = static_cast<int>(rng() % 2000);

    std::atomic<bool> observing{true};
    std::thread observer;
    if (p_.max_pending > 0) observer = std::thread([&] { Observe(observing); });
    std::vector<std::thread> threads;
    for (int i = 0; i < p_.producers; ++i) {
      threads.emplace_back([this, i] { Produce(p_.seed * 1000 + i); });
    }
    std::vector<Timeout> stopped;
    for (int s = 0; s < p_.stoppers; ++s) {
      threads.emplace_back(
          [&, s] { StopWhenDue(stop_after, s == 0 ? pause_us : 0, &stopped); });
    }
    for (auto& t : threads) t.join();
    observing.store(false);
    if (observer.joinable()) observer.join();
    return stopped;
  }

  // Polls pendingTimeouts() against the limit while `observing`.
  void Observe(const std::atomic<bool>& observing) {
    while (observing.load()) {
      const int64_t n = timer_->pendingTimeouts();
      if (n > p_.max_pending || n < 0) pending_violation_.store(n);
      std::this_thread::yield();
    }
  }

  // Calls stop() once the producers have done `stop_after` operations (or
  // all of theirs), `pause_us` - 1000 microseconds later when that is
  // positive, and adds what it returned to `*stopped`.
  void StopWhenDue(int64_t stop_after, int pause_us,
                   std::vector<Timeout>* stopped) {
    while (ops_done_.load() < stop_after &&
           producers_done_.load() < p_.producers) {
      std::this_thread::yield();
    }
    if (pause_us > 1000) {
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us - 1000));
    }
    stop_started_.store(true);
    absl::StatusOr<std::vector<Timeout>> r = timer_->stop();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return;
    std::lock_guard<std::mutex> lock(stopped_mu_);
    for (Timeout& t : *r) stopped->push_back(std::move(t));
  }

  // Who did stop() return? Taking a task out and destroying it runs its
  // Capture's destructor, which names the task (public API only). Returns
  // how often stop() returned each task.
  std::vector<int> TakeBackStopped(std::vector<Timeout> stopped) {
    std::vector<int> in_stop(capacity_, 0);
    for (const Timeout& t : stopped) {
      EXPECT_TRUE(t.isCancelled());
      EXPECT_FALSE(t.isExpired());
      EXPECT_FALSE(t.cancel());
      last_destroyed_id = -1;
      {
        TimerTask task = t.takeTask();
        if (task == nullptr) {
          ADD_FAILURE() << "takeTask() on a timeout from stop() gave nothing";
          continue;
        }
      }  // destroyed here, on this thread
      EXPECT_TRUE(t.takeTask() == nullptr) << "takeTask() twice";
      if (last_destroyed_id < 0) {
        ADD_FAILURE() << "stop() returned a task without our capture";
        continue;
      }
      ++in_stop[last_destroyed_id];
    }
    return in_stop;
  }

  void Produce(uint32_t seed) {
    std::mt19937_64 rng(seed);
    int after_stop = 0;
    for (int i = 0; i < p_.ops_per_producer; ++i) {
      // Keep going for a while once stop() has begun (racing it), then quit.
      if (stop_started_.load() && ++after_stop > 100) break;
      ProduceOne(rng);
      ops_done_.fetch_add(1);
    }
    producers_done_.fetch_add(1);
  }

  // One producer operation: half schedule, a third cancel; the rest reset,
  // schedule periodic timeouts, cancelAll() or pause.
  void ProduceOne(std::mt19937_64& rng) {
    const uint64_t r = rng();
    switch (r % 10) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
        Schedule(timer_.get(), 0, rng());
        break;
      case 5:
        if ((r >> 8) % 8 == 0) {
          SchedulePeriodic(rng());
        } else if ((r >> 8) % 1024 == 1) {
          CancelAll(timer_.get());
        } else {
          ResetRandom(rng());
        }
        break;
      case 6:
      case 7:
      case 8:
        CancelRandom(rng());
        break;
      default:
        if ((r >> 8) % 8 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        } else {
          std::this_thread::yield();
        }
    }
  }

  void Schedule(Timer* timer, int depth, uint64_t r) {
    const int64_t id = next_id_.fetch_add(1);
    if (id >= capacity_) return;
    absl::Duration delay;
    switch (r % 20) {
      case 0:
        delay = absl::Hours(1);  // still there at stop()
        break;
      case 1:
        delay = -absl::Milliseconds(1);
        break;
      case 2:
        delay = absl::ZeroDuration();
        break;
      default:
        delay = absl::Microseconds((r >> 8) % 4000);
    }
    const int64_t not_before =
        NowNanos() + std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay));
    TimerTask task = [this, id, depth, not_before,
                      capture = Capture(this, id)](const Timeout& self) {
      RunTask(id, depth, not_before, self);
    };
    Adopt(id, timer->newTimeout(std::move(task), delay), r);
  }

  // Records newTimeout()'s or newPeriodic()'s result for task `id`; an
  // accepted handle goes into a random ring slot.
  void Adopt(int64_t id, absl::StatusOr<Timeout> t, uint64_t r) {
    Entry& e = entries_[id];
    if (t.ok()) {
      e.accepted.store(1);
      Timer* timer = t->timer();
      if (p_.max_pending > 0 && timer->pendingTimeouts() > p_.max_pending) {
        pending_violation_.store(timer->pendingTimeouts());
      }
      auto shared = std::make_shared<const Timeout>(*std::move(t));
      std::lock_guard<std::mutex> lock(ring_mu_);
      ring_[(r >> 20) % ring_.size()] = {std::move(shared), id};
    } else {
      e.rejected.store(1);
      const absl::StatusCode code = t.status().code();
      const bool ok_code =
          (code == absl::StatusCode::kFailedPrecondition &&
           stop_started_.load()) ||
          (code == absl::StatusCode::kResourceExhausted && p_.max_pending > 0);
      if (!ok_code) e.bad_code.store(1);
    }
  }

  // A periodic timeout, 1-3 ms apart, with any missed-run policy (slow runs
  // make it miss some); it cancels itself in its 1st to 6th run, or (one in
  // four) runs until a cancel(), cancelAll() or stop().
  void SchedulePeriodic(uint64_t r) {
    const int64_t id = next_id_.fetch_add(1);
    if (id >= capacity_) return;
    Entry& e = entries_[id];
    e.periodic.store(true);
    const int last_run =
        (r >> 4) % 4 == 0 ? 0 : 1 + static_cast<int>((r >> 8) % 6);
    const absl::Duration period = absl::Milliseconds(1 + (r >> 12) % 3);
    const absl::Duration initial = absl::Microseconds((r >> 16) % 3000);
    TimerTask task = [this, id, last_run,
                      capture = Capture(this, id)](const Timeout& self) {
      RunPeriodic(id, last_run, self);
    };
    const auto missed = static_cast<MissedRuns>((r >> 24) % 3);
    absl::StatusOr<Timeout> t =
        timer_->newPeriodic(std::move(task), initial, period, missed);
    Adopt(id, std::move(t), r);
  }

  // The handle in ring slot r % size (null when empty).
  Shared Pick(uint64_t r) {
    std::lock_guard<std::mutex> lock(ring_mu_);
    return ring_[r % ring_.size()];
  }

  // reset() on the handle in a random ring slot: a new delay of up to 4 ms.
  void ResetRandom(uint64_t r) {
    const Shared victim = Pick(r);
    if (victim.first == nullptr) return;
    // Counted before the call: the run it moves may come at once.
    Entry& e = entries_[victim.second];
    e.resets.fetch_add(1);
    if (!victim.first->reset(absl::Microseconds((r >> 20) % 4000))) {
      e.resets.fetch_sub(1);
    }
  }

  void CancelAll(Timer* timer) {
    cancelled_by_all_.fetch_add(timer->cancelAll());
  }

  // Cancels (or, one time in four, copies and drops) the handle in a random
  // ring slot: the very object other threads may be cancelling or copying.
  void CancelRandom(uint64_t r) {
    const Shared victim = Pick(r);
    if (victim.first == nullptr) return;
    const Timeout& handle = *victim.first;
    if ((r >> 40) % 4 == 0) {
      Timeout copy = handle;
      if (copy != handle) ADD_FAILURE() << "a copy differs from its handle";
      return;
    }
    if (handle.cancel()) {
      Entry& e = entries_[victim.second];
      e.cancelled.fetch_add(1);
      e.cancel_returned.store(true);
    }
  }

  // Whether the clock has reached `self`'s deadline() (as moved by reset()).
  static bool PastDeadline(const Timeout& self) {
    return NowNanos() >= testing::DeadlineNanos(self);
  }

  void RunPeriodic(int64_t id, int last_run, const Timeout& self) {
    Entry& e = entries_[id];
    if (e.in_run.exchange(true)) e.overlaps.fetch_add(1);
    // With an executor, deadline() is the next run's by the time this runs,
    // and a run handed over before a cancel() may still come. A reset()
    // during the run moves deadline() to the next run: the deadline is read
    // first, and the check skipped if a reset() was attempted (counted
    // before the call) by then.
    if (!p_.use_executor) {
      if (!PastDeadline(self) && e.resets.load() == 0) e.early.fetch_add(1);
      if (e.cancel_returned.load()) e.runs_after_cancel.fetch_add(1);
    }
    const int run = e.runs.fetch_add(1) + 1;
    const uint64_t r = Mix(p_.seed * 0x100000001ULL + id * 64 + run);
    if (r % 32 == 0) {  // a slow run: the next one comes due meanwhile
      std::this_thread::sleep_for(std::chrono::microseconds(r % 1500));
    }
    Timer* timer = self.timer();
    if (r % 97 == 1 && timer != nullptr) {
      CancelAll(timer);  // includes this timeout: this run is its last
      task_actions_.fetch_add(1);
    }
    if (run == last_run && self.cancel()) {
      e.cancelled.fetch_add(1);
      e.cancel_returned.store(true);
    }
    e.in_run.store(false);
  }

  void RunTask(int64_t id, int depth, int64_t not_before, const Timeout& self) {
    Entry& e = entries_[id];
    e.runs.fetch_add(1);
    if (e.resets.load() == 0 ? NowNanos() < not_before : !PastDeadline(self)) {
      e.early.fetch_add(1);
    }
    if (self.cancel()) e.cancelled.fetch_add(1);  // must be false: it expired
    const uint64_t r = Mix(p_.seed * 0x100000001ULL + id);
    // timer() is null once the Timer's destructor has started (not here: the
    // executor is drained before the Timer is destroyed, but be safe).
    Timer* timer = self.timer();
    if (depth < 3 && r % 3 == 0 && timer != nullptr) {
      from_tasks_.fetch_add(1);
      Schedule(timer, depth + 1, Mix(r));
      task_actions_.fetch_add(1);
    }
    if (r % 5 == 1) {
      CancelRandom(r >> 7);
      task_actions_.fetch_add(1);
    }
    if (r % 4096 == 7 && timer != nullptr) {
      CancelAll(timer);
      task_actions_.fetch_add(1);
    }
  }

  const StressParams p_;
  const int64_t capacity_;
  std::unique_ptr<Entry[]> entries_;
  // One handle object per accepted timeout, shared by every thread that
  // picks its slot; the mutex guards only the slots.
  std::mutex ring_mu_;
  std::vector<Shared> ring_ = std::vector<Shared>(256);  // guarded by ring_mu_
  std::mutex stopped_mu_;  // the stoppers' results
  std::unique_ptr<QueueExecutor> executor_;
  std::unique_ptr<Timer> timer_;
  std::atomic<int64_t> next_id_{0};
  std::atomic<int64_t> ops_done_{0};
  std::atomic<int64_t> task_actions_{0};
  std::atomic<int64_t> from_tasks_{0};
  std::atomic<int> producers_done_{0};
  std::atomic<bool> stop_started_{false};
  std::atomic<int64_t> pending_violation_{0};
  std::atomic<int64_t> cancelled_by_all_{0};  // the sum of cancelAll()'s counts
};

}  // namespace

StressParams ParamsForSeed(uint32_t seed, int ops_per_producer) {
  StressParams p;
  p.seed = seed;
  p.ops_per_producer = ops_per_producer;
  p.use_executor = seed % 2 == 0;
  p.max_pending = seed % 3 == 0 ? 50 : 0;
  p.stoppers = seed % 4 == 1 ? 2 : 1;
  return p;
}

StressCounts RunStressRound(const StressParams& params) {
  return StressRound(params).Run();
}

}  // namespace tickwheel::stress
