// tools/bench/bench_timer.h
// -----------------------------------------------------------------------------
// The one small interface that the benchmark's workloads (workloads_*.h) run
// against, and the options every implementation is built from.
//
// It is a C++20 concept, not a virtual base class: each workload is a template
// instantiated once per implementation, so no implementation pays for a
// virtual call or a type-erased handle that a real user of it would not pay
// for. The three models are
//   TickwheelBench (tickwheel_bench.h)  tickwheel::Timer, public API only;
//   AsioBench      (asio_bench.h)       boost::asio::steady_timer on one
//                                       io_context thread;
//   HeapBench      (heap_bench.h)       std::priority_queue + mutex +
//                                       condition variable + one thread.
//
// Contract of a model T
//   T(const BenchTimerOptions&)   builds the timer; may start its thread.
//   T::kName                      short name used in tables and JSON.
//   T::kExactPending              true if Pending() and Cancel()'s answer are
//                                 exact when the call returns (tickwheel,
//                                 heap); false if they lag behind a thread
//                                 that has yet to apply requests (Asio).
//   T::Handle                     what Schedule returns; cheap to move. It must
//                                 be dropped before the T is destroyed.
//   Schedule(f, delay) -> Handle  runs `f()` once, `delay` from now, on the
//                                 timer's thread. `f` is any nothrow-movable
//                                 callable; every workload passes one that
//                                 captures 16 bytes. Thread-safe.
//   Cancel(h) -> bool             asks for cancellation. Thread-safe. What the
//                                 bool means differs (see each model): Asio
//                                 cannot say synchronously and returns true
//                                 once the request is posted.
//   Pending() -> int64_t          timeouts armed and neither run nor
//                                 cancelled, as the model can tell it.
//   Stop() -> int64_t             stops the thread; returns how many timeouts
//                                 were still pending (never run). Their tasks
//                                 are destroyed, not run. Idempotent.
//   Wakeups() -> int64_t          times the timer's thread came back from a
//                                 sleep so far (W5).
//   Counters() -> CounterMap      implementation-specific counters for the
//                                 JSON output.
//
// Every model reads time from std::chrono::steady_clock (CLOCK_MONOTONIC),
// as the workloads do, so fire times and deadlines are on one scale.

#ifndef TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_
#define TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_

#include <chrono>
#include <concepts>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace tickwheel::bench {

struct BenchTimerOptions {
  // The wheel's tick (tickwheel only; the other two have no tick).
  std::chrono::nanoseconds tick = std::chrono::milliseconds(100);
  // tickwheel's ticks_per_wheel.
  int ticks_per_wheel = 512;
};

using CounterMap = std::map<std::string, double>;

// The reference callable used to check the concept: 16 bytes of capture, the
// size every workload uses.
struct ConceptCheckTask {
  void* a = nullptr;
  int64_t b = 0;
  void operator()() const {}
};

template <typename T>
concept BenchTimer =
    std::constructible_from<T, const BenchTimerOptions&> &&
    std::movable<typename T::Handle> &&
    requires(T& t, typename T::Handle& h, std::chrono::nanoseconds d) {
      { T::kName } -> std::convertible_to<std::string_view>;
      { T::kExactPending } -> std::convertible_to<bool>;
      { t.Schedule(ConceptCheckTask{}, d) } -> std::same_as<typename T::Handle>;
      { t.Cancel(h) } -> std::same_as<bool>;
      { t.Pending() } -> std::same_as<int64_t>;
      { t.Stop() } -> std::same_as<int64_t>;
      { t.Wakeups() } -> std::same_as<int64_t>;
      { t.Counters() } -> std::same_as<CounterMap>;
    };

// Monotonic nanoseconds on the scale every model uses.
inline int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_BENCH_TIMER_H_
