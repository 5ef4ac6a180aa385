#include "tools/bench/tickwheel_bench.h"

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace tickwheel::bench {

TickwheelBench::TickwheelBench(const BenchTimerOptions& options) {
  TimerOptions o;
  o.tick_duration = absl::Nanoseconds(options.tick.count());
  o.ticks_per_wheel = options.ticks_per_wheel;
  o.thread_name = "tw-bench";
  absl::StatusOr<std::unique_ptr<Timer>> timer = Timer::Create(std::move(o));
  if (!timer.ok()) {
    fmt::print(stderr, "bench: Timer::Create failed: {}\n",
               timer.status().ToString());
    std::abort();
  }
  timer_ = *std::move(timer);
}

int64_t TickwheelBench::Stop() {
  if (unprocessed_ >= 0) return unprocessed_;
  absl::StatusOr<std::vector<Timeout>> left = timer_->stop();
  if (!left.ok()) {
    fmt::print(stderr, "bench: Timer::stop failed: {}\n",
               left.status().ToString());
    std::abort();
  }
  for (const Timeout& t : *left) t.takeTask();  // destroyed, never run
  unprocessed_ = static_cast<int64_t>(left->size());
  return unprocessed_;
}

CounterMap TickwheelBench::Counters() {
  const TimerMetrics m = timer_->metrics();
  return {
      {"expired", static_cast<double>(m.expired)},
      {"cancelled", static_cast<double>(m.cancelled)},
      {"ticks", static_cast<double>(m.ticks)},
      {"catch_up_ticks", static_cast<double>(m.catch_up_ticks)},
      {"wakeups", static_cast<double>(m.wakeups)},
      {"worst_lateness_us", absl::ToDoubleMicroseconds(m.worst_lateness)},
      {"failed_new_timeout",
       static_cast<double>(failed_.load(std::memory_order_relaxed))},
  };
}

}  // namespace tickwheel::bench
