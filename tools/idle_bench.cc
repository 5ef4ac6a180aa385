// tools/idle_bench: the numbers of docs/IDLE_TRACKER.md.
//
//   bazel run -c opt //tools:idle_bench            # about 40 s
//   bazel run -c opt //tools:idle_bench -- --quick # about 10 s, smaller runs
//
// 1. ns per IdleHandle::touch() with 1 and 2 threads, next to a bare relaxed
//    atomic store over the same number of objects spaced like entries, in the
//    same run (ratio = touch / store).
// 2. Timer operations (newTimeout + cancel) per second of activity: the lazy
//    tracker vs the naive "cancel + newTimeout on every event", each on a
//    Timer with the same options, under the same paced load (N objects, each
//    active R times a second). Also the process CPU time per second.
// 3. Bytes per tracked object at 1,000,000 objects: VmRSS growth of a child
//    process that registers them (tracker active, 60 s timeout), next to the
//    naive design's 1,000,000 Timeouts.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/timer/timer.h"

namespace {

using tickwheel::IdleHandle;
using tickwheel::IdleTracker;
using tickwheel::IdleTrackerOptions;
using tickwheel::Timeout;
using tickwheel::Timer;
using SteadyClock = std::chrono::steady_clock;

bool quick = false;

double Seconds(SteadyClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

int64_t VmRssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// ---------------------------------------------------------------- 1. touch()

// A cell spaced like an IdleEntry (about 112 bytes with malloc's header), so
// the baseline walks the same number of cache lines.
struct alignas(16) Cell {
  std::atomic<int64_t> v{0};
  char pad[112 - sizeof(std::atomic<int64_t>)];
};

// ns per operation on each of `threads` threads, each running its own
// work(iters). Best of `reps` (the slowest thread of each rep counts).
template <typename MakeWork>
double NsPerOp(int threads, int64_t iters, int reps, MakeWork make_work) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> ns(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        auto work = make_work(t);
        ready.fetch_add(1);
        while (!go.load()) {
        }
        const auto start = SteadyClock::now();
        work(iters);
        ns[t] = 1e9 * Seconds(SteadyClock::now() - start) /
                static_cast<double>(iters);
      });
    }
    while (ready.load() != threads) {
    }
    go = true;
    for (auto& th : pool) th.join();
    double worst = 0;
    for (double x : ns) worst = std::max(worst, x);
    best = std::min(best, worst);
  }
  return best;
}

void BenchTouch() {
  IdleTrackerOptions options;  // 60 s default timeout, 100 ms tick
  auto tracker = IdleTracker::Create(options).value();
  (void)tracker->Activate();
  const int64_t iters = quick ? 20'000'000 : 200'000'000;
  const int reps = quick ? 2 : 5;
  fmt::print("1. touch() vs a bare relaxed store, {} ops per thread, best of "
             "{}; each thread has its own objects, round-robin\n",
             iters, reps);
  // 1 object: everything in L1. 1024 objects: a busy I/O thread's
  // connections (about 112 KB of entries per thread, L2).
  for (int objects : {1, 1024}) {
    for (int threads : {1, 2}) {
      std::vector<std::vector<IdleHandle>> handles(threads);
      std::vector<std::vector<Cell>> cells(threads);
      for (int t = 0; t < threads; ++t) {
        cells[t] = std::vector<Cell>(objects);
        for (int i = 0; i < objects; ++i) {
          handles[t].push_back(tracker->Register([] {}).value());
        }
      }
      const int64_t mask = objects - 1;  // objects is a power of two
      const double store_ns = NsPerOp(threads, iters, reps, [&](int t) {
        return [c = cells[t].data(), mask](int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            c[i & mask].v.store(i, std::memory_order_relaxed);
          }
        };
      });
      const double touch_ns = NsPerOp(threads, iters, reps, [&](int t) {
        return [h = handles[t].data(), mask](int64_t n) {
          for (int64_t i = 0; i < n; ++i) h[i & mask].touch();
        };
      });
      fmt::print("   {:>4} object{} {} thread{}: touch() {:5.2f} ns, relaxed "
                 "store {:5.2f} ns, ratio {:.2f}\n",
                 objects, objects > 1 ? "s" : " ", threads,
                 threads > 1 ? "s" : " ", touch_ns, store_ns,
                 touch_ns / store_ns);
    }
  }
  (void)tracker->Deactivate();
}

// ------------------------------------------------ 2. timer ops per second

struct LoadResult {
  double seconds = 0;
  int64_t events = 0;
  int64_t timer_ops = 0;
  double cpu = 0;
};

// Calls on_event(i) for objects i round-robin, `per_ms` events each
// millisecond, for `duration`.
template <typename F>
LoadResult PacedLoad(int objects, int per_ms, SteadyClock::duration duration,
                     F on_event) {
  LoadResult r;
  const double cpu0 = CpuSeconds();
  const auto start = SteadyClock::now();
  auto next = start;
  int cursor = 0;
  while (SteadyClock::now() - start < duration) {
    for (int k = 0; k < per_ms; ++k) {
      on_event(cursor);
      cursor = cursor + 1 == objects ? 0 : cursor + 1;
      ++r.events;
    }
    next += std::chrono::milliseconds(1);
    std::this_thread::sleep_until(next);
  }
  r.seconds = Seconds(SteadyClock::now() - start);
  r.cpu = CpuSeconds() - cpu0;
  return r;
}

void BenchTimerOps() {
  const int objects = 10'000;
  const int rate = 10;  // events per object per second
  const absl::Duration tick = absl::Milliseconds(10);
  const absl::Duration idle = absl::Seconds(1);
  const auto duration = std::chrono::seconds(quick ? 3 : 10);
  const int per_ms = objects * rate / 1000;
  fmt::print("2. timer operations per second of activity: {} objects, each "
             "active {}x/s ({} events/s), idle timeout {}, tick {}, {} s\n",
             objects, rate, objects * rate, absl::FormatDuration(idle),
             absl::FormatDuration(tick), Seconds(duration));

  {  // Lazy.
    IdleTrackerOptions options;
    options.tick_duration = tick;
    options.default_idle_timeout = idle;
    auto tracker = IdleTracker::Create(options).value();
    (void)tracker->Activate();
    std::vector<IdleHandle> handles;
    for (int i = 0; i < objects; ++i) {
      handles.push_back(tracker->Register([] {}).value());
    }
    const auto before = tracker->metrics();
    LoadResult r = PacedLoad(objects, per_ms, duration,
                             [&](int i) { handles[i].touch(); });
    const auto after = tracker->metrics();
    r.timer_ops = (after.timer_ops - before.timer_ops) +
                  (after.refreshes - before.refreshes);
    fmt::print("   lazy : {:>9.0f} events/s  {:>9.0f} timer ops/s  ({:.4f} per "
               "event)  cpu {:.3f} s/s  fired={}\n",
               r.events / r.seconds, r.timer_ops / r.seconds,
               static_cast<double>(r.timer_ops) / r.events, r.cpu / r.seconds,
               after.fired);
    fmt::print("          tracker: {}\n", after);
    handles.clear();
    (void)tracker->Deactivate();
  }
  {  // Naive: cancel + newTimeout per event, on a Timer with the same options.
    tickwheel::TimerOptions options;
    options.tick_duration = tick;
    options.ticks_per_wheel = 512;
    auto timer = Timer::Create(options).value();
    std::atomic<int64_t> fired{0};
    auto task = [&fired](const Timeout&) { fired.fetch_add(1); };
    std::vector<Timeout> timeouts;
    for (int i = 0; i < objects; ++i) {
      timeouts.push_back(timer->newTimeout(task, idle).value());
    }
    int64_t ops = 0;
    LoadResult r = PacedLoad(objects, per_ms, duration, [&](int i) {
      timeouts[i].cancel();
      timeouts[i] = timer->newTimeout(task, idle).value();
      ops += 2;
    });
    r.timer_ops = ops;
    fmt::print("   naive: {:>9.0f} events/s  {:>9.0f} timer ops/s  ({:.4f} per "
               "event)  cpu {:.3f} s/s  fired={}\n",
               r.events / r.seconds, r.timer_ops / r.seconds,
               static_cast<double>(r.timer_ops) / r.events, r.cpu / r.seconds,
               fired.load());
    fmt::print("          timer: {}\n", timer->metrics());
    (void)timer->stop();
  }
}

// ------------------------------------------------------- 3. bytes per object

// Runs `f` in a child process so that each measurement starts from a fresh
// heap (freed memory would otherwise be reused and hide the growth).
template <typename F>
void InChild(F f) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    f();
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

void BenchMemory() {
  const int n = quick ? 100'000 : 1'000'000;
  fmt::print("3. memory at {} tracked objects (VmRSS growth / objects; the "
             "handles' own {} bytes each are in a vector filled beforehand and "
             "not counted). sizeof: IdleEntry {} B, TimeoutNode {} B\n",
             n, sizeof(IdleHandle), sizeof(tickwheel::internal::IdleEntry),
             sizeof(tickwheel::internal::TimeoutNode));
  InChild([n] {
    IdleTrackerOptions options;  // 60 s timeout, 100 ms tick, 512 buckets
    auto tracker = IdleTracker::Create(options).value();
    (void)tracker->Activate();
    std::vector<IdleHandle> handles(n);  // written now: not in the delta
    int dummy = 0;
    const int64_t before = VmRssKb();
    for (int i = 0; i < n; ++i) {
      handles[i] = tracker->Register([p = &dummy] { ++*p; }).value();
    }
    // Let the worker move the new timeouts into the wheel.
    while (tracker->timerMetrics().ticks < 2 + n / 100'000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const int64_t after = VmRssKb();
    fmt::print("   lazy tracker : {:.1f} bytes per object (VmRSS {} -> {} kB); "
               "{}\n",
               1024.0 * static_cast<double>(after - before) / n, before, after,
               tracker->metrics());
  });
  InChild([n] {
    auto timer = Timer::Create().value();
    std::vector<Timeout> timeouts(n);  // written now: not in the delta
    int dummy = 0;
    const int64_t before = VmRssKb();
    for (int i = 0; i < n; ++i) {
      timeouts[i] = timer->newTimeout([p = &dummy](const Timeout&) { ++*p; },
                                      absl::Seconds(60))
                        .value();
    }
    while (timer->metrics().ticks < 2 + n / 100'000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const int64_t after = VmRssKb();
    fmt::print("   naive Timeout: {:.1f} bytes per object (VmRSS {} -> {} kB; "
               "8-byte handles not counted)\n",
               1024.0 * static_cast<double>(after - before) / n, before, after);
  });
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
  }
  fmt::print("idle_bench{} at {} on {} cores\n", quick ? " --quick" : "",
             absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", absl::Now(),
                              absl::UTCTimeZone()),
             std::thread::hardware_concurrency());
  BenchMemory();  // first: forks before this process has any thread
  BenchTouch();
  BenchTimerOps();
  return 0;
}
