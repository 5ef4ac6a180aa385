// tools/bench/workloads/coro_deadline.h
// -----------------------------------------------------------------------------
// coro_deadline: the request-deadline pattern in an Asio coroutine. On one
// io_context thread, one coroutine serves N requests in turn, each awaiting
// `deadline || reply`; the reply (a post to the io_context) always comes
// first, so each request arms a 30 s deadline and cancels it. tickwheel's
// deadline is AsyncSleep() on a Timer with default options
// (tickwheel/timer/asio.h); asio's is a standalone asio::steady_timer made
// for the request, as Asio users write it. Both run on standalone Asio with
// the same coroutine and `||`, so what differs is the deadline. There is no
// heap row: the hand-written timer thread has no Asio operation. Reports
// wall time and the io thread's CPU per request, and checks that every
// request got its reply first and that no deadline is left pending.

#ifndef TICKWHEEL_TOOLS_BENCH_WORKLOADS_CORO_DEADLINE_H_
#define TICKWHEEL_TOOLS_BENCH_WORKLOADS_CORO_DEADLINE_H_

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct CoroDeadline {
  static constexpr const char* kName = "coro_deadline";
  static constexpr const char* kWhat =
      "Asio coroutine: deadline || reply, the deadline armed and cancelled "
      "(standalone Asio; no heap row)";
  static constexpr Metric kMetrics[] = {
      {"ns_per_request", "ns per request", "ns", Better::kLower, 0},
      {"cpu_per_request", "io thread CPU per request", "ns", Better::kLower, 0},
  };

  // One repetition, with AsyncSleep() or with asio::steady_timer.
  static RepOutput RunTickwheel(const BenchConfig& c, int64_t, uint64_t);
  static RepOutput RunAsio(const BenchConfig& c, int64_t, uint64_t);
};

// coro_deadline_local: coro_deadline with tickwheel's deadline on an
// AsioLocalTimer (tickwheel/timer/asio_local_timer.h) driven by the same
// io_context, on its thread: no timer thread, no hop. asio's row is the
// same asio::steady_timer per request on that io_context as above.
struct CoroDeadlineLocal {
  static constexpr const char* kName = "coro_deadline_local";
  static constexpr const char* kWhat =
      "coro_deadline with an AsioLocalTimer on the io_context's own thread "
      "(no heap row)";
  static constexpr Metric kMetrics[] = {
      {"ns_per_request", "ns per request", "ns", Better::kLower, 0},
      {"cpu_per_request", "io thread CPU per request", "ns", Better::kLower, 0},
  };

  static RepOutput RunTickwheel(const BenchConfig& c, int64_t, uint64_t);
  static RepOutput RunAsio(const BenchConfig& c, int64_t, uint64_t);
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_WORKLOADS_CORO_DEADLINE_H_
