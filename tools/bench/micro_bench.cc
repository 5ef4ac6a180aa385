// tools/bench/micro_bench.cc
// -----------------------------------------------------------------------------
// //tools/bench:micro: Google Benchmark micro-benchmarks of tickwheel's hot
// paths. Build with -c opt --config=opt; run with --benchmark_min_time=0.5.
//   BM_NewTimeout        newTimeout() of a 16-byte task 30 s away, handle
//                        dropped; the timer is replaced (untimed) every 64 Ki
//                        calls so that memory stays bounded.
//   BM_NewTimeoutCancel  newTimeout() then cancel(): schedule_cancel's pair.
//                        Both with the default slack and with slack 0
//                        (slack0:1), which must cost the same.
//   BM_Cancel            cancel() alone, over batches of 1024 (manual time).
//   BM_ResetLater        reset() of a pending timeout to a later deadline:
//                        re-arming a keep-alive in place.
//   BM_ResetEarlier      reset() to an earlier deadline, alternating with a
//                        later one so that the deadline stays in range: an
//                        earlier deadline is handed to the worker.
//   BM_ResetAtLater      resetAt() to a later absolute deadline: reset()
//                        without its clock read.
//   BM_RearmByCancelAndNew  the same re-arm done the old way: cancel() and a
//                        new newTimeout(), the pair BM_ResetLater replaces.
//   BM_ClockRead         one steady_clock read, which reset() and
//                        newTimeout() each make: the floor under both.
//   BM_ExpireTick/N      one Advance() of the internal Wheel over a level-0
//                        bucket of N due nodes, in allocation order: a tick's
//                        work minus running the tasks.
//   BM_ExpireTickRandomOrder/N  the same in random memory order, as a bucket
//                        fed by random delays is (mass_expiry).
//   BM_CascadeAndExpire/N  N nodes a wheel turn ahead: each moves down a
//                        level and then expires.
//   BM_ExpireBurst/N     a real Timer on a ManualClock: N timeouts due at one
//                        instant, one clock step, timed until the worker has
//                        run them all: the whole expiry path per timeout.
// The timers use a 1 ms tick so that the worker frees cancelled nodes quickly.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wheel.h"

namespace {

using tickwheel::Timeout;
using tickwheel::Timer;
using tickwheel::TimerOptions;
using tickwheel::internal::TimeoutNode;
using tickwheel::internal::Wheel;

// slack0: TimerOptions::slack = 0 instead of the default (one tick); clock:
// the timer's, null for the steady clock.
std::unique_ptr<Timer> MakeTimer(
    bool slack0 = false, std::shared_ptr<tickwheel::Clock> clock = nullptr) {
  TimerOptions o;
  o.tick_duration = absl::Milliseconds(1);
  if (slack0) o.slack = absl::ZeroDuration();
  o.clock = std::move(clock);
  return Timer::Create(std::move(o)).value();
}

// 16 bytes of capture, as in the workloads.
struct Task16 {
  int64_t* counter;
  int64_t payload;
  void operator()(const Timeout&) const { *counter += payload; }
};

void BM_NewTimeout(benchmark::State& state) {
  int64_t counter = 0;
  const bool slack0 = state.range(0) != 0;
  auto timer = MakeTimer(slack0);
  int64_t batch = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        timer->newTimeout(Task16{&counter, 1}, absl::Seconds(30)));
    if (++batch == 65536) {
      state.PauseTiming();
      timer.reset();  // stops it; pending tasks are destroyed
      timer = MakeTimer(slack0);
      timer->newTimeout(Task16{&counter, 1}, absl::Seconds(30)).value();
      batch = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NewTimeout)->ArgName("slack0")->Arg(0)->Arg(1);

void BM_NewTimeoutCancel(benchmark::State& state) {
  int64_t counter = 0;
  auto timer = MakeTimer(state.range(0) != 0);
  for (auto _ : state) {
    absl::StatusOr<Timeout> t =
        timer->newTimeout(Task16{&counter, 1}, absl::Seconds(30));
    benchmark::DoNotOptimize(t->cancel());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NewTimeoutCancel)->ArgName("slack0")->Arg(0)->Arg(1);

void BM_Cancel(benchmark::State& state) {
  constexpr int kBatch = 1024;
  int64_t counter = 0;
  auto timer = MakeTimer();
  std::vector<Timeout> batch;
  batch.reserve(kBatch);
  for (auto _ : state) {
    batch.clear();
    for (int i = 0; i < kBatch; ++i) {
      batch.push_back(
          timer->newTimeout(Task16{&counter, 1}, absl::Seconds(30)).value());
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (const Timeout& t : batch) benchmark::DoNotOptimize(t.cancel());
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  state.counters["per_cancel"] =
      benchmark::Counter(kBatch, benchmark::Counter::kIsIterationInvariantRate |
                                     benchmark::Counter::kInvert);
}
BENCHMARK(BM_Cancel)->UseManualTime();

// Re-arms one keep-alive per connection, round-robin over 1024 connections
// so that the handles are not all in one cache line: rearm(handle, round)
// per iteration, `round` counting the passes over all of them.
constexpr int kConnections = 1024;

template <typename Rearm>
void RearmLoop(benchmark::State& state, Timer& timer, Rearm&& rearm) {
  int64_t counter = 0;
  std::vector<Timeout> conns;
  conns.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    conns.push_back(
        timer.newTimeout(Task16{&counter, 1}, absl::Seconds(30)).value());
  }
  size_t i = 0;
  int64_t round = 0;
  for (auto _ : state) {
    rearm(conns[i], round);
    if (++i == kConnections) {
      i = 0;
      ++round;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_ResetLater(benchmark::State& state) {
  auto timer = MakeTimer();
  absl::Duration delay = absl::Seconds(30);
  RearmLoop(state, *timer, [&](Timeout& t, int64_t) {
    delay += absl::Nanoseconds(1);  // later even if the clock stood still
    benchmark::DoNotOptimize(t.reset(delay));
  });
}
BENCHMARK(BM_ResetLater);

void BM_ResetEarlier(benchmark::State& state) {
  auto timer = MakeTimer();
  RearmLoop(state, *timer, [](Timeout& t, int64_t round) {
    benchmark::DoNotOptimize(
        t.reset(round % 2 == 0 ? absl::Seconds(20) : absl::Seconds(30)));
  });
}
BENCHMARK(BM_ResetEarlier);

void BM_ResetAtLater(benchmark::State& state) {
  auto timer = MakeTimer();
  tickwheel::TimePoint deadline = timer->now() + std::chrono::seconds(30);
  RearmLoop(state, *timer, [&](Timeout& t, int64_t) {
    deadline += std::chrono::nanoseconds(1);
    benchmark::DoNotOptimize(t.resetAt(deadline));
  });
}
BENCHMARK(BM_ResetAtLater);

void BM_ClockRead(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(BM_ClockRead);

void BM_RearmByCancelAndNew(benchmark::State& state) {
  int64_t counter = 0;
  auto timer = MakeTimer();
  RearmLoop(state, *timer, [&](Timeout& t, int64_t) {
    benchmark::DoNotOptimize(t.cancel());
    t = timer->newTimeout(Task16{&counter, 1}, absl::Seconds(30)).value();
  });
}
BENCHMARK(BM_RearmByCancelAndNew);

// N individually allocated nodes, in allocation order, or shuffled.
std::vector<std::unique_ptr<TimeoutNode>> MakeNodes(int64_t n, bool shuffled) {
  std::vector<std::unique_ptr<TimeoutNode>> nodes;
  nodes.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    nodes.push_back(std::make_unique<TimeoutNode>());
  if (shuffled) {
    std::mt19937_64 rng(7);
    std::shuffle(nodes.begin(), nodes.end(), rng);
  }
  return nodes;
}

// Links all nodes `ahead` ticks after the wheel's elapsed tick (untimed),
// then times one Advance() to that tick, which hands every node out.
void AdvanceOverBucket(benchmark::State& state, bool shuffled, int64_t ahead) {
  const int64_t n = state.range(0);
  Wheel wheel(512);  // 1 ns ticks: a deadline of due + 1 is due at `due`
  auto nodes = MakeNodes(n, shuffled);
  int64_t expired = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const int64_t due = wheel.elapsed() + ahead;
    for (auto& node : nodes) {
      node->deadline.store(due + 1);
      wheel.Insert(node.get(), node->deadline.load());
    }
    state.ResumeTiming();
    wheel.Advance(due, INT64_MAX, [&](TimeoutNode* node) {
      benchmark::DoNotOptimize(node);
      ++expired;
      return true;
    });
  }
  if (expired != n * state.iterations()) state.SkipWithError("not all expired");
  state.SetItemsProcessed(state.iterations() * n);
}

void NodeCounts(benchmark::internal::Benchmark* b) {
  for (int log2 : {10, 14, 17, 20}) b->Arg(int64_t{1} << log2);
}

void BM_ExpireTick(benchmark::State& state) {
  AdvanceOverBucket(state, false, 0);
}
BENCHMARK(BM_ExpireTick)->Apply(NodeCounts);

void BM_ExpireTickRandomOrder(benchmark::State& state) {
  AdvanceOverBucket(state, true, 0);
}
BENCHMARK(BM_ExpireTickRandomOrder)->Apply(NodeCounts);

void BM_CascadeAndExpire(benchmark::State& state) {
  AdvanceOverBucket(state, true, 512);
}
BENCHMARK(BM_CascadeAndExpire)->Apply(NodeCounts);

// Bumps a counter that only the worker writes: a load and a store, so that
// the task costs next to nothing.
struct Bump {
  std::atomic<int64_t>* ran;
  void operator()(const Timeout&) const {
    ran->store(ran->load(std::memory_order_relaxed) + 1,
               std::memory_order_release);
  }
};

void BM_ExpireBurst(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto clock = std::make_shared<tickwheel::ManualClock>();
  auto timer = MakeTimer(false, clock);
  std::atomic<int64_t> ran{0};
  int64_t target = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int64_t i = 0; i < n; ++i) {
      benchmark::DoNotOptimize(
          timer->newTimeout(Bump{&ran}, absl::Milliseconds(50)));
    }
    // The worker may sleep through those calls (their deadlines are later
    // than its planned wake-up): one due now wakes it, it files them all,
    // and the step runs that one.
    benchmark::DoNotOptimize(
        timer->newTimeout(Bump{&ran}, absl::ZeroDuration()));
    target += n + 1;
    clock->AdvanceAndSettle(absl::Milliseconds(1));
    state.ResumeTiming();
    clock->Advance(absl::Milliseconds(60));
    while (ran.load(std::memory_order_acquire) < target)
      std::this_thread::yield();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ExpireBurst)
    ->Arg(1 << 14)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
