// tools/bench/owner_models.h
// -----------------------------------------------------------------------------
// The timers of the owner-thread workloads (workloads/owner_thread.h), each
// made and used on the one thread that calls it, with no hand-over:
//   LocalOwner     tickwheel::LocalTimer, driven by this thread
//   TimerProducer  tickwheel::Timer, this thread a producer; the tasks run on
//                  the Timer's worker thread
//   UvOwner        a libuv loop: uv_timer_init/start/stop on this thread,
//                  driven by uv_run() on it
//   EventOwner     a libevent base without a lock (EVENT_BASE_FLAG_NOLOCK:
//                  one thread uses it), evtimer_add/del on this thread,
//                  driven by event_base_loop() on it
// Each offers
//   Pair(delay_ns) -> bool  schedules a task `delay_ns` ahead as its users
//                           would (a relative delay) and cancels it at once;
//                           true if the cancel took
//   Turn()                  one loop turn without waiting (the Timer: none)
//   At(task, deadline_ns)   schedules `task` to run at the steady_clock
//                           instant, never before it
//   Drive(done, n)          turns the loop, waiting in between, until `done`
//                           reaches n or nothing is pending (the Timer: waits
//                           until `done` reaches n)
//   Pending()               scheduled, neither run nor cancelled
// libuv and libevent keep each timeout in one heap block (the handle or the
// event, and the task) freed when it runs or is cancelled: libevent's at
// once, libuv's in the close callback of the next loop turn, since a
// handle's memory must outlive uv_close(). Deadlines for At() follow
// UvBench and EventBench: on the loop clock, rounded up.

#ifndef TICKWHEEL_TOOLS_BENCH_OWNER_MODELS_H_
#define TICKWHEEL_TOOLS_BENCH_OWNER_MODELS_H_

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/timer.h"
#include "tools/bench/event_bench.h"
#include "tools/bench/uv_bench.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

template <typename V>
V CheckOk(absl::StatusOr<V> v) {
  if (v.ok()) return *std::move(v);
  std::fprintf(stderr, "bench: tickwheel failed: %s\n",
               v.status().ToString().c_str());
  std::abort();
}

inline TimePoint SteadyAt(int64_t ns) {
  return TimePoint(std::chrono::nanoseconds(ns));
}

class LocalOwner {
 public:
  // `tick`: unset, LocalTimerOptions' default.
  explicit LocalOwner(std::optional<std::chrono::nanoseconds> tick) {
    LocalTimerOptions o;
    if (tick) o.tick_duration = absl::FromChrono(*tick);
    timer_ = CheckOk(LocalTimer::Create(std::move(o)));
  }
  bool Pair(int64_t delay_ns, CountingTask task) {
    return CheckOk(timer_->newTimeout(task, absl::Nanoseconds(delay_ns)))
        .cancel();
  }
  void Turn() { timer_->advance(); }
  template <typename F>
  void At(F task, int64_t deadline_ns) {
    CheckOk(timer_->newTimeoutAt(std::move(task), SteadyAt(deadline_ns)));
  }
  void Drive(const std::atomic<int64_t>& done, int64_t n) {
    while (done.load(std::memory_order_relaxed) < n && Pending() > 0) {
      if (const int ms = timer_->pollTimeoutMs(); ms > 0) poll(nullptr, 0, ms);
      timer_->advance();
    }
  }
  int64_t Pending() { return timer_->pendingTimeouts(); }

 private:
  std::unique_ptr<LocalTimer> timer_;
};

class TimerProducer {
 public:
  explicit TimerProducer(std::optional<std::chrono::nanoseconds> tick) {
    TimerOptions o;
    if (tick) o.tick_duration = absl::FromChrono(*tick);
    timer_ = CheckOk(Timer::Create(std::move(o)));
  }
  bool Pair(int64_t delay_ns, CountingTask task) {
    return CheckOk(timer_->newTimeout(task, absl::Nanoseconds(delay_ns)))
        .cancel();
  }
  void Turn() {}
  template <typename F>
  void At(F task, int64_t deadline_ns) {
    CheckOk(timer_->newTimeoutAt(std::move(task), SteadyAt(deadline_ns)));
    last_deadline_ = std::max(last_deadline_, deadline_ns);
  }
  // Waits for the tasks themselves: the pending count drops before the last
  // task has run. A minute past the deadline at most, as AwaitRuns().
  void Drive(const std::atomic<int64_t>& done, int64_t n) {
    WaitFor([&] { return done.load(std::memory_order_acquire) >= n; },
            60'000'000'000 + std::max<int64_t>(0, last_deadline_ - NowNanos()));
  }
  int64_t Pending() { return timer_->pendingTimeouts(); }

 private:
  std::unique_ptr<Timer> timer_;
  int64_t last_deadline_ = 0;
};

class UvOwner {
 public:
  struct Entry {  // one timeout, freed in OnClose
    uv_timer_t timer;
    std::function<void()> task;
    UvOwner* owner;
  };

  // `read_clock`: uv_update_time() before each uv_timer_start() of Pair(),
  // so that a timeout counts from the call rather than from the loop's
  // cached time.
  explicit UvOwner(bool read_clock) : read_clock_(read_clock) {
    UvCheck(uv_loop_init(&loop_), "uv_loop_init");
    loop_.data = this;
  }
  ~UvOwner() {  // closes the timers left, their tasks unrun
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) {
          if (!uv_is_closing(h)) uv_close(h, &OnClose);
        },
        nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    UvCheck(uv_loop_close(&loop_), "uv_loop_close");
  }

  bool Pair(int64_t delay_ns, CountingTask task) {
    if (read_clock_) uv_update_time(&loop_);
    Entry* e = Start(task, static_cast<uint64_t>(delay_ns) / 1'000'000);
    uv_timer_stop(&e->timer);
    --pending_;
    uv_close(reinterpret_cast<uv_handle_t*>(&e->timer), &OnClose);
    return true;  // the timer was active: uv_timer_stop() stopped it
  }
  void Turn() { uv_run(&loop_, UV_RUN_NOWAIT); }
  template <typename F>
  void At(F task, int64_t deadline_ns) {
    Start(std::move(task), UvTimeoutMs(&loop_, deadline_ns));
  }
  void Drive(const std::atomic<int64_t>&, int64_t) {
    uv_run(&loop_, UV_RUN_DEFAULT);  // until no timer is left
  }
  int64_t Pending() { return pending_; }

 private:
  template <typename F>
  Entry* Start(F task, uint64_t timeout_ms) {
    Entry* e = new Entry{{}, std::move(task), this};
    UvCheck(uv_timer_init(&loop_, &e->timer), "uv_timer_init");
    e->timer.data = e;
    UvCheck(uv_timer_start(&e->timer, &OnTimer, timeout_ms, 0),
            "uv_timer_start");
    ++pending_;
    return e;
  }
  static void OnTimer(uv_timer_t* t) {
    Entry* e = static_cast<Entry*>(t->data);
    --e->owner->pending_;
    e->task();
    uv_close(reinterpret_cast<uv_handle_t*>(t), &OnClose);
  }
  static void OnClose(uv_handle_t* h) { delete static_cast<Entry*>(h->data); }

  uv_loop_t loop_;
  const bool read_clock_;
  int64_t pending_ = 0;
};

class EventOwner {
 public:
  struct Entry {  // one timeout, freed when it runs or is cancelled
    event ev;
    std::function<void()> task;
    EventOwner* owner;
  };

  EventOwner() : base_(NewEventBase(EVENT_BASE_FLAG_NOLOCK)) {}
  ~EventOwner() {  // deletes the events left, their tasks unrun
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
      delete e;
    }
    event_base_free(base_);
  }

  bool Pair(int64_t delay_ns, CountingTask task) {
    Entry* e = Add(task, delay_ns);
    const bool took = event_del(&e->ev) == 0;
    --pending_;
    delete e;
    return took;
  }
  void Turn() { event_base_loop(base_, EVLOOP_NONBLOCK); }
  template <typename F>
  void At(F task, int64_t deadline_ns) {
    Add(std::move(task), deadline_ns - NowNanos());
  }
  void Drive(const std::atomic<int64_t>&, int64_t) {
    event_base_loop(base_, 0);  // until no event is left
  }
  int64_t Pending() { return pending_; }

 private:
  template <typename F>
  Entry* Add(F task, int64_t delay_ns) {
    Entry* e = new Entry{{}, std::move(task), this};
    evtimer_assign(&e->ev, base_, &OnFire, e);
    const timeval tv = EventTimeout(delay_ns);
    if (evtimer_add(&e->ev, &tv) != 0) {
      std::fprintf(stderr, "bench: libevent evtimer_add failed\n");
      std::abort();
    }
    ++pending_;
    return e;
  }
  static void OnFire(evutil_socket_t, short, void* arg) {
    Entry* e = static_cast<Entry*>(arg);
    --e->owner->pending_;
    e->task();
    delete e;  // libevent is done with a one-shot event whose callback runs
  }

  event_base* base_;
  int64_t pending_ = 0;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_OWNER_MODELS_H_
