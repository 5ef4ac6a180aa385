// tools/bench/event_bench.h
// -----------------------------------------------------------------------------
// libevent's timer events on one loop thread running
// event_base_loop(EVLOOP_NO_EXIT_ON_EMPTY), used as a libevent user with
// threads would: evthread_use_pthreads() once, an event_base with its lock,
// and producers that add and delete events from their own threads (libevent
// takes the base's lock and wakes the loop when a new timer is the earliest).
// Each timeout is one heap block (std::make_shared: the control block, the
// struct event, the task), which the base holds a reference to while the
// event may still run, and a producer's handle as long as the producer keeps
// it. Cancel() is exact (kExactPending): it returns true iff the task will
// never run. Wakeups() counts the loop thread's voluntary context switches,
// as for Asio.
//
// Who frees what (Entry::state decides, one CAS each side):
//   OnFire (loop thread) and Cancel() (any thread) each try to move `state`
//   from kPending, to kFired or kCancelled; exactly one wins, and only the
//   winner touches `task` and `self` afterwards. The winner releases `self`,
//   the base's reference, once libevent is done with the event:
//   - OnFire: a one-shot event is deleted before its callback runs, and
//     libevent touches it no more once the callback returns, so the callback
//     may release it (and so free the block, if no handle is left).
//   - Cancel(): event_del_block() takes the base's lock, under which the
//     loop marks the event it runs; it removes the event from the timer heap
//     or the active queue, or, if OnFire is running (it lost the CAS and
//     returns at once), waits until it has returned. After that the loop
//     cannot reach the event, so releasing `self` is safe. Without the wait,
//     a losing OnFire could still be about to read `state` when the caller
//     drops its handle and frees the block.
//   `self` is written in Schedule() before evtimer_add(), whose lock orders it
//   before the loop's callback; a Cancel() sees it through the handle it was
//   given.
//
// Clock: the base runs with EVENT_BASE_FLAG_PRECISE_TIMER, so that libevent
// reads CLOCK_MONOTONIC (steady_clock's clock) in microseconds rather than
// the coarse clock, which lags by up to a kernel tick, and with
// EVENT_BASE_FLAG_NO_CACHE_TIME, so that an add from another thread while the
// loop runs callbacks reads the clock rather than the loop's cached time.
// libevent fires an event once its microsecond clock reaches the add's
// reading (truncated to microseconds) plus the timeout; a timeout of the
// delay rounded up to whole microseconds plus one makes that after the
// deadline, which Schedule() read before the add. With libevent's defaults,
// tasks would run early against steady_clock.

#ifndef TICKWHEEL_TOOLS_BENCH_EVENT_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_EVENT_BENCH_H_

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/thread.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "tools/bench/bench_timer.h"
#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

// A timeout for evtimer_add() that fires `delay_ns` after a clock reading
// taken before the add, never earlier (see the file comment).
inline timeval EventTimeout(int64_t delay_ns) {
  const int64_t us = (std::max<int64_t>(0, delay_ns) + 999) / 1000 + 1;
  return timeval{static_cast<time_t>(us / 1'000'000),
                 static_cast<suseconds_t>(us % 1'000'000)};
}

// A base of the given flags, on libevent's monotonic clock; aborts if
// libevent cannot make one.
inline event_base* NewEventBase(int flags) {
  event_config* config = event_config_new();
  if (config == nullptr ||
      event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER | flags) !=
          0) {
    std::fprintf(stderr, "bench: libevent event_config failed\n");
    std::abort();
  }
  event_base* base = event_base_new_with_config(config);
  event_config_free(config);
  if (base == nullptr) {
    std::fprintf(stderr, "bench: libevent event_base_new failed\n");
    std::abort();
  }
  return base;
}

class EventBench {
 public:
  static constexpr std::string_view kName = "libevent";
  static constexpr bool kExactPending = true;
  struct Entry {  // one timeout; who touches what: the file comment
    enum State : uint8_t { kPending, kCancelled, kFired };
    event ev;
    EventBench* owner = nullptr;
    std::function<void()> task;
    std::atomic<uint8_t> state{kPending};
    std::shared_ptr<Entry> self;  // the base's reference
  };
  using Handle = std::shared_ptr<Entry>;

  explicit EventBench(const BenchTimerOptions&) {
    static const int threads = evthread_use_pthreads();  // once per process
    if (threads != 0) {
      std::fprintf(stderr, "bench: evthread_use_pthreads failed\n");
      std::abort();
    }
    base_ = NewEventBase(EVENT_BASE_FLAG_NO_CACHE_TIME);
    // Returns once a callback of the running loop has said so:
    // event_base_loop() clears a loopbreak made before it started, so Stop()
    // must not come earlier. Shared, as in AsioBench: the loop thread may
    // still be inside set_value() when this thread wakes and would destroy
    // it.
    auto started = std::make_shared<std::promise<void>>();
    std::future<void> ready = started->get_future();
    const timeval now{0, 0};
    if (event_base_once(
            base_, -1, EV_TIMEOUT,
            [](evutil_socket_t, short, void* p) {
              static_cast<std::promise<void>*>(p)->set_value();
            },
            started.get(), &now) != 0) {
      std::fprintf(stderr, "bench: libevent event_base_once failed\n");
      std::abort();
    }
    thread_ = std::thread([this, started] {
      loop_tid_ = static_cast<int>(gettid());
      event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
    });
    ready.wait();
  }
  ~EventBench() { Stop(); }

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    auto entry = std::make_shared<Entry>();
    entry->owner = this;
    entry->task = std::forward<F>(f);
    entry->self = entry;
    evtimer_assign(&entry->ev, base_, &OnFire, entry.get());
    pending_.fetch_add(1, std::memory_order_relaxed);
    const timeval tv = EventTimeout(delay.count());
    if (evtimer_add(&entry->ev, &tv) != 0) {
      std::fprintf(stderr, "bench: libevent evtimer_add failed\n");
      std::abort();
    }
    return entry;
  }

  bool Cancel(const Handle& h) {  // true iff this call cancelled it
    uint8_t expected = Entry::kPending;
    if (!h->state.compare_exchange_strong(expected, Entry::kCancelled,
                                          std::memory_order_acq_rel)) {
      return false;
    }
    event_del_block(&h->ev);
    pending_.fetch_sub(1, std::memory_order_relaxed);
    h->task = nullptr;  // captures die at cancellation
    h->self.reset();    // the caller's handle keeps the block
    return true;
  }

  int64_t Pending() { return pending_.load(std::memory_order_relaxed); }
  int64_t Wakeups() { return ThreadVoluntarySwitches(loop_tid_); }

  // Stops the loop, then, with no callback running and no producer left,
  // deletes the events still in the base and destroys their tasks unrun.
  int64_t Stop() {
    if (!thread_.joinable()) return unprocessed_;
    event_base_loopbreak(base_);  // wakes the loop from another thread
    thread_.join();
    std::vector<Entry*> left;
    event_base_foreach_event(
        base_,
        [](const event_base*, const event* ev, void* out) {
          if (event_get_callback(ev) == &OnFire) {
            static_cast<std::vector<Entry*>*>(out)->push_back(
                static_cast<Entry*>(event_get_callback_arg(ev)));
          }
          return 0;
        },
        &left);
    for (Entry* e : left) {
      event_del(&e->ev);
      e->state.store(Entry::kCancelled, std::memory_order_relaxed);
      e->task = nullptr;
      e->self.reset();  // may free the block
    }
    pending_.fetch_sub(static_cast<int64_t>(left.size()));
    unprocessed_ = static_cast<int64_t>(left.size());
    event_base_free(base_);
    return unprocessed_;
  }

 private:
  static void OnFire(evutil_socket_t, short, void* arg) {  // loop thread
    Entry* e = static_cast<Entry*>(arg);
    uint8_t expected = Entry::kPending;
    if (!e->state.compare_exchange_strong(expected, Entry::kFired,
                                          std::memory_order_acq_rel)) {
      return;  // a Cancel() won: it deletes the event and releases `self`
    }
    e->owner->pending_.fetch_sub(1, std::memory_order_relaxed);
    e->task();
    e->task = nullptr;
    Handle last = std::move(e->self);  // may free the block
  }

  event_base* base_ = nullptr;
  std::thread thread_;
  int loop_tid_ = 0;
  int64_t unprocessed_ = 0;
  std::atomic<int64_t> pending_{0};
};

static_assert(BenchTimer<EventBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_EVENT_BENCH_H_
