// tools/bench/bench_timer.h
// -----------------------------------------------------------------------------
// What the workloads run against: a concept, not a virtual base, so that each
// workload is instantiated per timer and none pays for a virtual call its own
// users would not pay for. Models: TickwheelBench, AsioBench, HeapBench.
//   Schedule(f, delay) -> Handle  runs f() once, delay from now, on the timer's
//                                 thread; Cancel(h) -> bool. Both thread-safe.
//   Pending()   armed, neither run nor cancelled; exact when the call returns
//               if kExactPending (Asio applies requests later, on its thread)
//   Stop()      stops the thread, destroys the pending tasks unrun and returns
//               their count; idempotent. Handles must not outlive the timer.
//   Wakeups()   returns of the timer's thread from a sleep so far
// All read std::chrono::steady_clock, as the workloads do.

#ifndef TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_
#define TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_

#include <chrono>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tickwheel::bench {

struct BenchTimerOptions {
  std::optional<std::chrono::nanoseconds>
      tick;  // tickwheel's; unset: the default
  // tickwheel's TimerOptions::slack; unset: the default (one tick). The
  // other timers run each task as soon as they can and ignore it.
  std::optional<std::chrono::nanoseconds> slack;
};

struct ConceptCheckTask {  // 16 bytes of capture, as every workload's task
  void* a = nullptr;
  int64_t b = 0;
  void operator()() const {}
};

template <typename T>
concept BenchTimer = std::constructible_from<T, const BenchTimerOptions&> &&
    requires(T& t, typename T::Handle& h, std::chrono::nanoseconds d) {
  { T::kName } -> std::convertible_to<std::string_view>;
  { T::kExactPending } -> std::convertible_to<bool>;
  { t.Schedule(ConceptCheckTask{}, d) } -> std::same_as<typename T::Handle>;
  { t.Cancel(h) } -> std::same_as<bool>;
  { t.Pending() } -> std::same_as<int64_t>;
  { t.Stop() } -> std::same_as<int64_t>;
  { t.Wakeups() } -> std::same_as<int64_t>;
};

inline int64_t NowNanos() {
  return std::chrono::steady_clock::now().time_since_epoch() /
         std::chrono::nanoseconds(1);
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_
