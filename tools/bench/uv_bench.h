// tools/bench/uv_bench.h
// -----------------------------------------------------------------------------
// libuv's uv_timer_t on one loop thread running uv_run(), used as a libuv
// user would: a loop and its handles belong to the loop thread and only
// uv_async_send() may be called from others, so producers hand requests over
// through a queue under a mutex and wake the loop with uv_async_send().
// Schedule() reads the clock (so that the hand-over's delay does not move
// the deadline) and queues the arming; Cancel() queues a stop and returns
// true once queued, as only the loop thread can tell. pending_ is kept on the
// loop thread, so Pending() lags queued requests (kExactPending false, as for
// AsioBench); Stop() first lets every queued request run. Wakeups() counts the
// loop thread's voluntary context switches, as for Asio.
//
// Each timeout is one heap block (std::make_shared: the control block, the
// uv_timer_t and the task). The loop holds a reference from the arming until
// libuv's close callback, since a handle's memory must outlive uv_close();
// a producer's handle holds one as long as the producer keeps it.
//
// libuv counts time in whole milliseconds of its loop clock (CLOCK_MONOTONIC
// or its coarse variant, which never runs ahead of it), and fires a timer in
// the first loop turn whose clock has reached the timer's due millisecond.
// Arm() makes that millisecond the deadline rounded up, on the same clock as
// steady_clock, so that no task runs before its deadline: a timeout relative
// to uv_now() alone would start from a cached, possibly older, reading and
// could fire early by up to a millisecond and more.

#ifndef TICKWHEEL_TOOLS_BENCH_UV_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_UV_BENCH_H_

#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

// The first millisecond of libuv's loop clock at or after `deadline_ns`
// (steady_clock), as a timeout from the loop's cached time: 0 if it has come.
inline uint64_t UvTimeoutMs(uv_loop_t* loop, int64_t deadline_ns) {
  const uint64_t due_ms =
      static_cast<uint64_t>(std::max<int64_t>(0, deadline_ns) + 999'999) /
      1'000'000;
  const uint64_t now_ms = uv_now(loop);
  return due_ms > now_ms ? due_ms - now_ms : 0;
}

inline void UvCheck(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "bench: libuv %s failed: %s\n", what, uv_strerror(rc));
  std::abort();
}

class UvBench {
 public:
  static constexpr std::string_view kName = "libuv";
  static constexpr bool kExactPending = false;
  struct Entry {       // one timeout
    uv_timer_t timer;  // loop thread only, from Arm() to OnClose()
    std::function<void()> task;
    int64_t deadline_ns = 0;      // steady_clock
    std::shared_ptr<Entry> self;  // the loop's reference (loop thread only)
  };
  using Handle = std::shared_ptr<Entry>;

  explicit UvBench(const BenchTimerOptions&) {
    UvCheck(uv_loop_init(&loop_), "uv_loop_init");
    loop_.data = this;
    UvCheck(uv_async_init(&loop_, &async_, &OnAsync), "uv_async_init");
    // Shared, as in AsioBench: the loop thread may still be inside
    // set_value() when this thread wakes and would destroy it.
    auto started = std::make_shared<std::promise<void>>();
    std::future<void> ready = started->get_future();
    thread_ = std::thread([this, started] {
      loop_tid_ = static_cast<int>(gettid());
      started->set_value();
      uv_run(&loop_, UV_RUN_DEFAULT);
    });
    ready.wait();
  }
  ~UvBench() { Stop(); }

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    auto entry = std::make_shared<Entry>();
    entry->task = std::forward<F>(f);
    entry->deadline_ns = NowNanos() + std::max<int64_t>(0, delay.count());
    Post({entry, Request::kArm});
    return entry;
  }

  bool Cancel(const Handle& h) {
    Post({h, Request::kCancel});
    return true;
  }

  int64_t Pending() { return pending_.load(std::memory_order_relaxed); }
  int64_t Wakeups() { return ThreadVoluntarySwitches(loop_tid_); }

  int64_t Stop() {
    if (thread_.joinable()) {
      Post({nullptr, Request::kShutdown});  // after every request queued
      thread_.join();  // unprocessed_ was written on the loop thread
      UvCheck(uv_loop_close(&loop_), "uv_loop_close");
    }
    return unprocessed_;
  }

 private:
  struct Request {
    enum Kind { kArm, kCancel, kShutdown };
    Handle entry;
    Kind kind;
  };

  // The loop swaps the whole queue out under the lock, so a request that
  // finds the queue non-empty follows one whose uv_async_send() is still to
  // be called or not yet answered: one send per batch is enough, and libuv
  // runs OnAsync at least once after each send.
  void Post(Request r) {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(mu_);
      was_empty = queue_.empty();
      queue_.push_back(std::move(r));
    }
    if (was_empty) UvCheck(uv_async_send(&async_), "uv_async_send");
  }

  static void OnAsync(uv_async_t* a) {
    static_cast<UvBench*>(a->loop->data)->Drain();
  }

  void Drain() {  // loop thread
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch_.swap(queue_);
    }
    for (Request& r : batch_) {
      if (r.kind == Request::kArm) Arm(std::move(r.entry));
      if (r.kind == Request::kCancel) Disarm(*r.entry);
      if (r.kind == Request::kShutdown) Shutdown();
    }
    batch_.clear();
  }

  void Arm(Handle entry) {
    Entry* e = entry.get();
    UvCheck(uv_timer_init(&loop_, &e->timer), "uv_timer_init");
    e->timer.data = e;
    e->self = std::move(entry);
    UvCheck(uv_timer_start(&e->timer, &OnTimer,
                           UvTimeoutMs(&loop_, e->deadline_ns), 0),
            "uv_timer_start");
    AddPending(1);
  }

  // The arming came first (one queue, in order): the timer is initialised,
  // and active unless it has run or was cancelled already.
  void Disarm(Entry& e) {
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&e.timer))) return;
    uv_timer_stop(&e.timer);
    AddPending(-1);
    e.task = nullptr;  // captures die at cancellation
    Close(e);
  }

  static void OnTimer(uv_timer_t* t) {
    Entry& e = *static_cast<Entry*>(t->data);
    static_cast<UvBench*>(t->loop->data)->AddPending(-1);
    e.task();
    e.task = nullptr;
    Close(e);
  }

  static void Close(Entry& e) {
    uv_close(reinterpret_cast<uv_handle_t*>(&e.timer), [](uv_handle_t* h) {
      Handle last = std::move(static_cast<Entry*>(h->data)->self);
    });  // `last` may free the entry, after libuv is done with it
  }

  // Every request queued before this one has run: the active timers are the
  // pending ones. Closes every handle, destroying the tasks unrun; uv_run()
  // returns once the close callbacks have run.
  void Shutdown() {
    unprocessed_ = pending_.load(std::memory_order_relaxed);
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) {
          if (uv_is_closing(h)) return;
          if (h->type != UV_TIMER) return uv_close(h, nullptr);
          Entry& e = *static_cast<Entry*>(h->data);
          e.task = nullptr;
          Close(e);
        },
        nullptr);
  }

  void AddPending(int64_t by) {  // single writer: the loop thread
    pending_.store(pending_.load(std::memory_order_relaxed) + by,
                   std::memory_order_relaxed);
  }

  uv_loop_t loop_;
  uv_async_t async_;
  std::mutex mu_;
  std::vector<Request> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> batch_;  // loop thread only
  std::thread thread_;
  int loop_tid_ = 0;
  int64_t unprocessed_ = 0;  // loop thread, then read after join()
  std::atomic<int64_t> pending_{0};
};

static_assert(BenchTimer<UvBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_UV_BENCH_H_
