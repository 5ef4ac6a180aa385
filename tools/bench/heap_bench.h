// tools/bench/heap_bench.h
// -----------------------------------------------------------------------------
// The timer thread people write by hand, reasonable rather than a straw man:
// a min-heap of {deadline, entry} under one mutex, one worker that sleeps
// until the earliest deadline (Schedule() notifies only for an earlier one)
// and runs every due entry with the lock released; Cancel() is a lock-free
// CAS on the entry's state, exact, and the entry stays in the heap until it
// reaches the top or Schedule() compacts a heap more than half cancelled.
// Entry::state is the only field threads race on; only the worker touches
// Entry::task. cancelled_in_heap_ is approximate: it steers compaction only.

#ifndef TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
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
  static constexpr size_t kCompactMin =
      1024;  // below it, compaction does not pay
  struct Entry {
    enum State : uint8_t { kPending, kCancelled, kFired };
    std::atomic<uint8_t> state{kPending};
    std::function<void()> task;
  };
  using Handle = std::shared_ptr<Entry>;

  explicit HeapBench(const BenchTimerOptions&) : thread_([this] { Run(); }) {}
  ~HeapBench() { Stop(); }

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
      notify = deadline < sleeping_until_;
      if (notify)
        sleeping_until_ = deadline;  // one notify per earlier deadline
    }
    if (notify) cv_.notify_one();
    return entry;
  }

  bool Cancel(const Handle& h) {  // true iff this call cancelled it
    uint8_t expected = Entry::kPending;
    if (!h->state.compare_exchange_strong(expected, Entry::kCancelled))
      return false;
    cancelled_in_heap_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  int64_t Pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(heap_.size()) - cancelled_in_heap_.load();
  }
  int64_t Wakeups() { return wakeups_.load(std::memory_order_relaxed); }

  int64_t Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return unprocessed_;
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    unprocessed_ = std::count_if(
        heap_.items().begin(), heap_.items().end(),
        [](const Item& i) { return i.entry->state.load() == Entry::kPending; });
    heap_ = Heap();  // destroys the tasks, never run
    return unprocessed_;
  }

 private:
  struct Item {
    int64_t deadline;
    std::shared_ptr<Entry> entry;
    bool operator<(const Item& o) const {
      return deadline > o.deadline;
    }  // min-heap
  };
  struct Heap : std::priority_queue<Item> {  // exposes the items to compaction
    std::vector<Item>& items() { return c; }
  };

  void MaybeCompactLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t cancelled =
        cancelled_in_heap_.load(std::memory_order_relaxed);
    if (heap_.size() < kCompactMin ||
        cancelled * 2 <= static_cast<int64_t>(heap_.size()))
      return;
    const size_t removed = std::erase_if(heap_.items(), [](const Item& i) {
      return i.entry->state.load(std::memory_order_acquire) ==
             Entry::kCancelled;
    });
    std::make_heap(heap_.items().begin(),
                   heap_.items().end());  // the queue's order
    cancelled_in_heap_.fetch_sub(static_cast<int64_t>(removed),
                                 std::memory_order_relaxed);
  }

  // Pops what is due (and cancelled entries that reach the top) into `due`;
  // returns the deadline to sleep until, INT64_MAX if the heap is empty.
  int64_t PopDueLocked(std::vector<std::shared_ptr<Entry>>& due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t now = NowNanos();
    while (!heap_.empty()) {
      Item& top = const_cast<Item&>(heap_.top());  // popped right below
      uint8_t state = top.entry->state.load(std::memory_order_acquire);
      if (state == Entry::kPending) {
        if (top.deadline > now) return top.deadline;
        if (top.entry->state.compare_exchange_strong(state, Entry::kFired)) {
          due.push_back(std::move(top.entry));
        }
      }
      if (state == Entry::kCancelled)
        cancelled_in_heap_.fetch_sub(1, std::memory_order_relaxed);
      heap_.pop();
    }
    return INT64_MAX;
  }

  void Run() {
    std::vector<std::shared_ptr<Entry>> due;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      const int64_t next = PopDueLocked(due);
      if (!due.empty()) {  // run unlocked; the loop looks again before sleeping
        sleeping_until_ = INT64_MIN;
        lock.unlock();
        for (const std::shared_ptr<Entry>& e : due)
          std::exchange(e->task, nullptr)();
        due.clear();
        lock.lock();
        continue;
      }
      sleeping_until_ = next;
      if (next == INT64_MAX) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, std::chrono::steady_clock::time_point(
                                 std::chrono::nanoseconds(next)));
      }
      sleeping_until_ = INT64_MIN;
      wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Heap heap_ ABSL_GUARDED_BY(mu_);
  // The deadline the worker sleeps until: INT64_MAX while it waits for work,
  // INT64_MIN while it runs (then nobody needs to notify it).
  int64_t sleeping_until_ ABSL_GUARDED_BY(mu_) = INT64_MIN;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t unprocessed_ = 0;
  std::atomic<int64_t> cancelled_in_heap_{0};
  std::atomic<int64_t> wakeups_{0};  // written by the worker only
  std::thread thread_;  // last: starts once the members above exist
};

static_assert(BenchTimer<HeapBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_HEAP_BENCH_H_
