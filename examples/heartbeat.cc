// examples/heartbeat.cc: a periodic heartbeat, and a liveness check that
// fires only when the heartbeats stop.
//
// Two timers stand for two processes. The peer sends a heartbeat every
// kPeriod with newPeriodic(); after kBeats beats it "crashes" (its task
// cancels its own periodic timeout, which makes that run the last). We keep
// one "dead peer" timeout per peer and reset() it to kSilence on every
// heartbeat received: a reset() moves the deadline without allocating or
// waking the timer's thread, so it stays cheap at any heartbeat rate, and the
// timeout fires once, kSilence after the last heartbeat.
//
//   bazel run //examples:heartbeat

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/timer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tickwheel::Timeout;

constexpr auto kPeriod = std::chrono::milliseconds(50);
constexpr auto kSilence = std::chrono::milliseconds(250);  // 5 periods
constexpr int kBeats = 6;

// Our side: what we know of the peer. Lives in main(), declared before both
// timers and so destroyed after them: a Timer's destructor destroys its unrun
// tasks and joins its thread, so no task reaches this once it is gone.
struct PeerMonitor {
  Clock::time_point start;
  Timeout dead;  // set before the first heartbeat
  std::atomic<int> beats{0};
  std::atomic<int> failed_resets{0};
  std::atomic<int> early_beats{0};
  std::atomic<Clock::rep> last_beat{0};  // time_since_epoch of the last one
  std::promise<int> declared_dead;       // the beats seen when it fired

  double Ms(Clock::time_point t) const {
    return std::chrono::duration<double, std::milli>(t - start).count();
  }

  // A heartbeat arrives (here, on the peer's timer thread; in a server, on
  // the network thread).
  void OnHeartbeat() {
    const Clock::time_point now = Clock::now();
    last_beat = now.time_since_epoch().count();
    const int n = beats.fetch_add(1) + 1;
    if (!dead.reset(kSilence)) failed_resets.fetch_add(1);
    fmt::print(
        "  heartbeat {} at {:5.1f} ms: peer dead at {:5.1f} ms unless another "
        "comes\n",
        n, Ms(now), Ms(dead.deadline()));
  }
};

// The peer's heartbeat, every kPeriod on `peer`. The task takes its Timeout
// to check it is not early and, at the last beat, to cancel itself.
Timeout StartBeating(tickwheel::Timer& peer, PeerMonitor& monitor) {
  return peer
      .newPeriodic(
          [&monitor](const Timeout& self) {
            if (Clock::now() < self.deadline())
              monitor.early_beats.fetch_add(1);
            monitor.OnHeartbeat();
            if (monitor.beats == kBeats) {
              fmt::print(
                  "  peer crashes (its periodic timeout cancels itself)\n");
              self.cancel();
            }
          },
          kPeriod, kPeriod)
      .value();
}

void PrintLateness(const char* name, const tickwheel::Timer& timer) {
  const tickwheel::TimerMetrics m = timer.metrics();
  const tickwheel::LatenessHistogram& late = m.lateness;
  fmt::print("lateness on {}: {} runs, p50 {}, p99 {}, max {}\n", name,
             late.count(), absl::FormatDuration(late.Percentile(0.5)),
             absl::FormatDuration(late.Percentile(0.99)),
             absl::FormatDuration(late.max()));
}

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(5);
  options.thread_name = "ours";
  auto ours = tickwheel::Timer::Create(options).value();
  options.thread_name = "peer";
  auto peer = tickwheel::Timer::Create(options).value();

  PeerMonitor monitor;
  monitor.start = Clock::now();
  fmt::print("the peer beats every {} ms; dead after {} ms without a beat\n",
             kPeriod.count(), kSilence.count());
  monitor.dead =
      ours->newTimeout(
              [&monitor] {
                fmt::print(
                    "  {:5.1f} ms: no heartbeat for {} ms, peer declared "
                    "dead\n",
                    monitor.Ms(Clock::now()), kSilence.count());
                monitor.declared_dead.set_value(monitor.beats.load());
              },
              kSilence)
          .value();
  std::future<int> dead = monitor.declared_dead.get_future();

  const Timeout beat = StartBeating(*peer, monitor);

  const bool fired =
      dead.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const Clock::time_point fired_at = Clock::now();
  // Nothing runs after stop(): the monitor may now be read without atomics.
  const size_t ours_left = ours->stop().value().size();
  const size_t peer_left = peer->stop().value().size();

  const Clock::time_point last_beat{Clock::duration(monitor.last_beat.load())};
  const bool ok = fired && dead.get() == kBeats &&
                  fired_at >= last_beat + kSilence &&
                  monitor.failed_resets == 0 && monitor.early_beats == 0 &&
                  beat.isCancelled() && ours_left == 0 && peer_left == 0;
  PrintLateness("peer", *peer);
  PrintLateness("ours", *ours);
  fmt::print("{}\n",
             ok ? "OK: declared dead once, after the last heartbeat" : "WRONG");
  return ok ? 0 : 1;
}
