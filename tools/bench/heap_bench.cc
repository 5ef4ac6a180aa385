#include "tools/bench/heap_bench.h"

#include <unistd.h>

#include <algorithm>

namespace tickwheel::bench {

HeapBench::HeapBench(const BenchTimerOptions& /*options: no tick*/) {
  thread_ = std::thread([this] { Run(); });
}

bool HeapBench::Cancel(const Handle& h) {
  if (h == nullptr) return false;
  uint8_t expected = Entry::kPending;
  if (!h->state.compare_exchange_strong(expected, Entry::kCancelled,
                                        std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
    return false;  // already fired, or cancelled before
  }
  cancelled_in_heap_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t HeapBench::Pending() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(heap_.size()) -
         cancelled_in_heap_.load(std::memory_order_relaxed);
}

void HeapBench::MaybeCompactLocked() {
  const size_t size = heap_.size();
  if (size < kCompactMin ||
      cancelled_in_heap_.load(std::memory_order_relaxed) * 2 <=
          static_cast<int64_t>(size)) {
    return;
  }
  std::vector<Item>& items = heap_.items();
  const size_t removed = std::erase_if(items, [](const Item& i) {
    return i.entry->state.load(std::memory_order_acquire) == Entry::kCancelled;
  });
  std::make_heap(items.begin(), items.end());  // same order as the queue's
  cancelled_in_heap_.fetch_sub(static_cast<int64_t>(removed),
                               std::memory_order_relaxed);
  compactions_.fetch_add(1, std::memory_order_relaxed);
}

void HeapBench::Run() {
  worker_tid_.store(static_cast<int>(gettid()), std::memory_order_relaxed);
  std::vector<std::shared_ptr<Entry>> due;  // reused batch
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Pop everything that is due, and cancelled entries that reach the top.
    const int64_t now = NowNanos();
    while (!heap_.empty()) {
      Item& top = const_cast<Item&>(heap_.top());  // popped right below
      uint8_t state = top.entry->state.load(std::memory_order_acquire);
      if (state == Entry::kPending) {
        if (top.deadline > now) break;
        if (top.entry->state.compare_exchange_strong(
                state, Entry::kFired, std::memory_order_acq_rel,
                std::memory_order_acquire)) {
          due.push_back(std::move(top.entry));
        }
      }
      if (state == Entry::kCancelled) {
        cancelled_in_heap_.fetch_sub(1, std::memory_order_relaxed);
      }
      heap_.pop();
    }
    if (!due.empty()) {
      // Run the batch unlocked; producers need no notify meanwhile, since the
      // loop looks at the heap again before it sleeps.
      sleeping_until_ = INT64_MIN;
      lock.unlock();
      for (const std::shared_ptr<Entry>& e : due) {
        e->task();
        e->task = nullptr;  // captures die with the run
      }
      fired_.store(fired_.load(std::memory_order_relaxed) +
                       static_cast<int64_t>(due.size()),
                   std::memory_order_relaxed);
      due.clear();
      lock.lock();
      continue;
    }
    sleeping_until_ = heap_.empty() ? INT64_MAX : heap_.top().deadline;
    if (sleeping_until_ == INT64_MAX) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, std::chrono::steady_clock::time_point(
                               std::chrono::nanoseconds(sleeping_until_)));
    }
    sleeping_until_ = INT64_MIN;
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1,
                   std::memory_order_relaxed);
  }
}

int64_t HeapBench::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return unprocessed_;
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  int64_t pending = 0;
  for (const Item& i : heap_.items()) {
    if (i.entry->state.load(std::memory_order_acquire) == Entry::kPending) {
      ++pending;
    }
  }
  heap_ = Heap();  // destroys the entries and their tasks, never run
  unprocessed_ = pending;
  return unprocessed_;
}

CounterMap HeapBench::Counters() {
  return {
      {"wakeups", static_cast<double>(wakeups_.load(std::memory_order_relaxed))},
      {"fired", static_cast<double>(fired_.load(std::memory_order_relaxed))},
      {"compactions",
       static_cast<double>(compactions_.load(std::memory_order_relaxed))},
  };
}

}  // namespace tickwheel::bench
