// tools/bench/heap_bench.h
// -----------------------------------------------------------------------------
// HeapBench: the timer thread most people write by hand, the baseline of the
// benchmark (BenchTimer concept, bench_timer.h). Written to be reasonable,
// not a straw man:
//
//   * std::priority_queue of {deadline, shared_ptr<Entry>} (a min-heap on the
//     deadline, which sits in the heap item so comparisons touch no Entry);
//     one std::mutex, one std::condition_variable, one worker thread.
//   * The worker sleeps until the earliest deadline (wait_until on
//     steady_clock), not on a fixed tick. Schedule() notifies only when the
//     new deadline is earlier than the one the worker sleeps until.
//   * The worker pops every due entry under one lock acquisition, then runs
//     the tasks with the lock released, so tasks and producers do not
//     serialise on the mutex.
//   * Cancel() is lock-free: a CAS on the shared entry's state (pending ->
//     cancelled), exact like tickwheel's. The entry stays in the heap (lazy
//     deletion) until it reaches the top or until Schedule() compacts the
//     heap, which it does when more than half of it (and at least
//     kCompactMin entries) is cancelled. So a schedule-then-cancel workload
//     keeps the heap small, and the amortised cost of compaction is O(1) per
//     cancel.
//
// Ground rules
//   heap_, sleeping_until_, stopping_ are guarded by mu_. Entry::state is the
//   only field several threads race on: exactly one of Cancel() (pending ->
//   cancelled) and the worker's claim (pending -> fired) wins, and only the
//   worker touches Entry::task (it runs it, or destroys it with the entry).
//   cancelled_in_heap_ is an approximate count (Cancel increments it after its
//   CAS, the worker and compaction decrement it): it only steers compaction
//   and Pending().
//
// This class is thread-safe.

#ifndef TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tools/bench/bench_timer.h"

namespace tickwheel::bench {

class HeapBench {
 public:
  static constexpr std::string_view kName = "heap";
  static constexpr bool kExactPending = true;
  // Compaction does not pay below this many entries.
  static constexpr size_t kCompactMin = 1024;

  struct Entry {
    enum State : uint8_t { kPending, kCancelled, kFired };
    std::atomic<uint8_t> state{kPending};
    std::function<void()> task;
  };
  using Handle = std::shared_ptr<Entry>;

  explicit HeapBench(const BenchTimerOptions& options);
  ~HeapBench() { Stop(); }
  HeapBench(const HeapBench&) = delete;
  HeapBench& operator=(const HeapBench&) = delete;

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    auto entry = std::make_shared<Entry>();
    entry->task = std::forward<F>(f);
    const int64_t deadline = NowNanos() + std::max<int64_t>(0, delay.count());
    bool notify = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      MaybeCompactLocked();
      heap_.push(Item{deadline, entry});
      if (deadline < sleeping_until_) {
        sleeping_until_ = deadline;  // one notify per earlier deadline
        notify = true;
      }
    }
    if (notify) cv_.notify_one();
    return entry;
  }

  // True iff this call cancelled a pending entry; its task will not run.
  bool Cancel(const Handle& h);
  int64_t Pending();
  int64_t Stop();
  int64_t Wakeups() { return wakeups_.load(std::memory_order_relaxed); }
  CounterMap Counters();

 private:
  struct Item {
    int64_t deadline;
    std::shared_ptr<Entry> entry;
    // std::priority_queue is a max-heap: "less" means "later".
    bool operator<(const Item& o) const { return deadline > o.deadline; }
  };
  // Exposes the container so that compaction can filter it in place.
  struct Heap : std::priority_queue<Item> {
    std::vector<Item>& items() { return c; }
  };

  void Run();
  void MaybeCompactLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  std::condition_variable cv_;
  Heap heap_ ABSL_GUARDED_BY(mu_);
  // The deadline the worker sleeps until; INT64_MAX when it waits for work,
  // INT64_MIN while it is running (then nobody needs a notify).
  int64_t sleeping_until_ ABSL_GUARDED_BY(mu_) = INT64_MIN;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t unprocessed_ = -1;  // set by the first Stop()

  std::atomic<int64_t> cancelled_in_heap_{0};
  std::atomic<int64_t> wakeups_{0};      // written by the worker only
  std::atomic<int64_t> fired_{0};        // written by the worker only
  std::atomic<int64_t> compactions_{0};  // written under mu_
  std::atomic<int> worker_tid_{0};
  std::thread thread_;
};

static_assert(BenchTimer<HeapBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_
