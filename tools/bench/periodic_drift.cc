// tools/bench/periodic_drift.cc
// -----------------------------------------------------------------------------
// //tools/bench:periodic_drift: does a periodic timeout drift? One
// newPeriodic() with a 1 ms period on a timer with a 1 ms tick runs 10,000
// times (about 10 s), once with the default slack (one tick) and once with
// slack 0. Each run records when it started and the deadline the timer gave
// it (during a run, Timeout::deadline() is that run's).
//
// Reported per configuration: lateness against the deadline (p50, p99,
// max) and of the last run (fixed rate: lateness does not accumulate);
// grid times skipped because the timer fell a whole period behind; early
// runs and deadlines off the grid (first deadline + k * period), both of
// which must be 0; and the timer's own lateness histogram (measured when the
// worker claims each run).
//   bazel run -c opt //tools/bench:periodic_drift [-- --runs=N]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  std::vector<int64_t> lateness_ns;  // per run, against its grid time
  int64_t skipped = 0;
  int64_t early = 0;
  int64_t off_grid = 0;  // deadlines not a whole number of periods on
  std::string engine;    // the timer's own lateness histogram
};

int64_t Percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

Result Run(std::optional<absl::Duration> slack, int runs) {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(1);
  options.slack = slack;
  auto timer = tickwheel::Timer::Create(std::move(options)).value();
  constexpr int64_t kPeriodNs = 1'000'000;
  std::vector<Clock::time_point> started(static_cast<size_t>(runs));
  std::vector<Clock::time_point> deadline(static_cast<size_t>(runs));
  int count = 0;  // written by the worker only
  std::promise<void> done;
  auto periodic = timer->newPeriodic(
      [&](const tickwheel::Timeout& self) {
        const auto i = static_cast<size_t>(count);
        started[i] = Clock::now();
        deadline[i] = self.deadline();
        if (++count == runs) {
          self.cancel();  // this run is its last
          done.set_value();
        }
      },
      absl::Nanoseconds(kPeriodNs), absl::Nanoseconds(kPeriodNs));
  if (!periodic.ok()) {
    fmt::print(stderr, "newPeriodic: {}\n", periodic.status().ToString());
    std::exit(1);
  }
  done.get_future().wait();
  auto ns = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  };
  Result r;
  // The grid: the first deadline, then every period. A deadline off the grid
  // is drift; a grid time without a run is a skipped run.
  int64_t previous_k = -1;
  for (size_t i = 0; i < started.size(); ++i) {
    const int64_t offset = ns(deadline[i] - deadline[0]);
    if (offset % kPeriodNs != 0) ++r.off_grid;
    const int64_t k = offset / kPeriodNs;
    r.skipped += std::max<int64_t>(0, k - previous_k - 1);
    previous_k = k;
    if (started[i] < deadline[i]) ++r.early;
    r.lateness_ns.push_back(ns(started[i] - deadline[i]));
  }
  r.engine = timer->metrics().lateness.ToString();
  return r;
}

std::string Us(int64_t ns) { return fmt::format("{:.1f} us", ns / 1e3); }

}  // namespace

int main(int argc, char** argv) {
  int runs = 10'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--runs=", 7) == 0) runs = std::atoi(argv[i] + 7);
  }
  if (runs <= 0) {
    fmt::print(stderr, "usage: periodic_drift [--runs=N], N > 0\n");
    return 2;
  }
  fmt::print("{} runs of a 1 ms periodic timeout, 1 ms tick\n", runs);
  fmt::print("{:<16} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>9}\n", "slack",
             "p50", "p99", "max", "last run", "skipped", "early", "off grid");
  int64_t early = 0;
  for (auto [name, slack] :
       {std::pair<const char*, std::optional<absl::Duration>>{"default (tick)",
                                                              std::nullopt},
        {"0", absl::ZeroDuration()}}) {
    Result r = Run(slack, runs);
    fmt::print(
        "{:<16} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>9}\n", name,
        Us(Percentile(r.lateness_ns, 0.5)), Us(Percentile(r.lateness_ns, 0.99)),
        Us(*std::max_element(r.lateness_ns.begin(), r.lateness_ns.end())),
        Us(r.lateness_ns.back()), r.skipped, r.early, r.off_grid);
    fmt::print("{:<16} the timer's own histogram: {}\n", "", r.engine);
    early += r.early + r.off_grid;
  }
  return early == 0 ? 0 : 1;
}
