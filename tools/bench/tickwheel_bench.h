// tools/bench/tickwheel_bench.h
// -----------------------------------------------------------------------------
// TickwheelBench: tickwheel::Timer behind the benchmark's BenchTimer concept
// (bench_timer.h), through the public API (timer/timer.h) only, used the way
// the README tells users to: one Timer, newTimeout() from any thread, keep the
// Timeout handle if you may cancel, stop() at the end.
//
// Handle is tickwheel::Timeout (a reference-counted node pointer). Cancel()
// returns Timeout::cancel()'s answer, which is exact. Pending() is
// pendingTimeouts() (drops at cancel() time). Wakeups() and Counters() come
// from Timer::metrics().
//
// This class is thread-safe as Timer is.

#ifndef TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"
#include "tools/bench/bench_timer.h"

namespace tickwheel::bench {

class TickwheelBench {
 public:
  static constexpr std::string_view kName = "tickwheel";
  static constexpr bool kExactPending = true;
  using Handle = Timeout;

  explicit TickwheelBench(const BenchTimerOptions& options);
  ~TickwheelBench() { Stop(); }
  TickwheelBench(const TickwheelBench&) = delete;
  TickwheelBench& operator=(const TickwheelBench&) = delete;

  // A failed newTimeout() (it cannot fail in the workloads: no limit, not
  // stopped) yields an empty handle and is counted in Counters()["failed"].
  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    absl::StatusOr<Timeout> t = timer_->newTimeout(
        [f = std::forward<F>(f)](const Timeout&) mutable { f(); },
        absl::Nanoseconds(delay.count()));
    if (!t.ok()) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return Timeout();
    }
    return *std::move(t);
  }

  bool Cancel(const Handle& h) { return h.cancel(); }
  int64_t Pending() { return timer_->pendingTimeouts(); }
  int64_t Stop();
  int64_t Wakeups() { return timer_->metrics().wakeups; }
  CounterMap Counters();

 private:
  std::unique_ptr<Timer> timer_;
  int64_t unprocessed_ = -1;  // what the first Stop() saw
  std::atomic<int64_t> failed_{0};
};

static_assert(BenchTimer<TickwheelBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_
