// tools/bench/tickwheel_bench.h
// -----------------------------------------------------------------------------
// tickwheel::Timer through its public API only, used as the README says:
// default TimerOptions (but the tick and the slack, when a workload asks
// for them),
// newTimeout() from any thread, the handle kept only to cancel, stop() at the
// end. The workloads cannot make the API fail; if it does, the run aborts.

#ifndef TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"
#include "tools/bench/bench_timer.h"

namespace tickwheel::bench {

class TickwheelBench {
 public:
  static constexpr std::string_view kName = "tickwheel";
  static constexpr bool kExactPending = true;
  using Handle = Timeout;

  explicit TickwheelBench(const BenchTimerOptions& options) {
    TimerOptions o;
    if (options.tick)
      o.tick_duration = absl::Nanoseconds(options.tick->count());
    if (options.slack) o.slack = absl::Nanoseconds(options.slack->count());
    timer_ = Check(Timer::Create(std::move(o)));
  }
  ~TickwheelBench() { Stop(); }

  template <typename F>
  Handle Schedule(F&& f, std::chrono::nanoseconds delay) {
    return Check(timer_->newTimeout(
        [f = std::forward<F>(f)](const Timeout&) mutable { f(); },
        absl::Nanoseconds(delay.count())));
  }
  bool Cancel(const Handle& h) { return h.cancel(); }
  int64_t Pending() { return timer_->pendingTimeouts(); }
  int64_t Wakeups() { return timer_->metrics().wakeups; }
  int64_t Stop() {
    if (unprocessed_ < 0) {
      const std::vector<Timeout> left = Check(timer_->stop());
      for (const Timeout& t : left) t.takeTask();  // destroyed, never run
      unprocessed_ = static_cast<int64_t>(left.size());
    }
    return unprocessed_;
  }

 private:
  template <typename V>
  static V Check(absl::StatusOr<V> v) {
    if (v.ok()) return *std::move(v);
    std::fprintf(stderr, "bench: tickwheel failed: %s\n",
                 v.status().ToString().c_str());
    std::abort();
  }

  std::unique_ptr<Timer> timer_;
  int64_t unprocessed_ = -1;  // what the first Stop() returned
};

static_assert(BenchTimer<TickwheelBench>);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_TICKWHEEL_BENCH_H_
