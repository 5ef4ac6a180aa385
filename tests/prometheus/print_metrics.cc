// tests/prometheus/print_metrics.cc
// -----------------------------------------------------------------------------
// Test-only, for tests/prometheus/parse_test.py: runs a Timer, a LocalTimer,
// an IdleTracker and, with --durable, a DurableTimer on a redis-server of its
// own through known work, on the real clock, then prints one scrape of all
// their metrics (timer/prometheus.h, durable/prometheus.h) on stdout.
//
// The work, which the parser test expects to find counted:
//   Timer, labels {timer="main \"quoted\" \\ slash"}: 5 timeouts run, 2
//     cancelled, 1 pending;
//   LocalTimer, {timer="loop"}: 3 run by advance(), 1 pending;
//   IdleTracker, {tracker="conns"}: 2 registrations fire, 1 stays tracked;
//     its wheel's TimerMetrics under the same labels;
//   DurableTimer, {keyspace="prom"}: 3 scheduled, delivered, acknowledged.
// Exits non-zero, with the reason on stderr, when the work does not finish
// within a generous bound or a call fails.

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/prometheus.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/prometheus.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

constexpr absl::Duration kGiveUp = absl::Seconds(60);

// Polls `done` until it holds; false after kGiveUp.
template <typename Pred>
bool WaitFor(Pred done) {
  const absl::Time give_up = absl::Now() + kGiveUp;
  while (!done()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

absl::Status Fail(std::string_view what) {
  return absl::InternalError(fmt::format("{} did not finish", what));
}

absl::Status AddTimer(PrometheusExposition& scrape) {
  auto timer = Timer::Create({.tick_duration = absl::Milliseconds(1)});
  if (!timer.ok()) return timer.status();
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    (*timer)
        ->newTimeout([&] { ran.fetch_add(1); }, absl::Milliseconds(2))
        .IgnoreError();
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Timeout> t = (*timer)->newTimeout([] {}, absl::Hours(1));
    if (!t.ok() || !t->cancel()) return absl::InternalError("cancel failed");
  }
  (*timer)->newTimeout([] {}, absl::Hours(1)).IgnoreError();
  if (!WaitFor([&] { return ran.load() == 5; })) return Fail("Timer");
  return AddMetrics(scrape, (*timer)->metrics(),
                    {{"timer", "main \"quoted\" \\ slash"}});
}

absl::Status AddLocalTimer(PrometheusExposition& scrape) {
  auto timer = LocalTimer::Create();
  if (!timer.ok()) return timer.status();
  int ran = 0;
  for (int i = 0; i < 3; ++i) {
    (*timer)->newTimeout([&] { ++ran; }, absl::ZeroDuration()).IgnoreError();
  }
  (*timer)->newTimeout([] {}, absl::Hours(1)).IgnoreError();
  if (!WaitFor([&] {
        (*timer)->advance();
        return ran == 3;
      })) {
    return Fail("LocalTimer");
  }
  return AddMetrics(scrape, (*timer)->metrics(), {{"timer", "loop"}});
}

absl::Status AddIdleTracker(PrometheusExposition& scrape) {
  auto tracker =
      IdleTracker::Create({.default_idle_timeout = absl::Milliseconds(20),
                           .tick_duration = absl::Milliseconds(5)});
  if (!tracker.ok()) return tracker.status();
  if (absl::Status s = (*tracker)->Activate(); !s.ok()) return s;
  std::atomic<int> fired{0};
  std::vector<IdleHandle> handles;
  for (int i = 0; i < 2; ++i) {
    auto h = (*tracker)->Register([&] { fired.fetch_add(1); });
    if (!h.ok()) return h.status();
    handles.push_back(*std::move(h));
  }
  auto quiet = (*tracker)->Register([] {}, absl::Hours(1));
  if (!quiet.ok()) return quiet.status();
  if (!WaitFor([&] { return fired.load() == 2; })) return Fail("IdleTracker");
  const PrometheusLabels labels = {{"tracker", "conns"}};
  absl::Status s = AddMetrics(scrape, (*tracker)->metrics(), labels);
  s.Update(AddMetrics(scrape, (*tracker)->timerMetrics(), labels));
  quiet->unregister();
  return s;
}

absl::Status AddDurableTimer(PrometheusExposition& scrape) {
  auto redis = durable::testing::RedisServer::Start();
  if (!redis.ok()) return redis.status();
  durable::DurableTimerOptions o;
  o.redis = (*redis)->uri();
  o.keyspace = "prom";
  o.poll_interval = absl::Milliseconds(20);
  auto timers = durable::DurableTimer::Connect(std::move(o));
  if (!timers.ok()) return timers.status();
  for (const char* id : {"a", "b", "c"}) {
    if (absl::Status s = (*timers)->ScheduleAfter(id, absl::ZeroDuration());
        !s.ok()) {
      return s;
    }
  }
  absl::Status s = (*timers)->Start(
      [](const durable::FiredTimer&) { return absl::OkStatus(); });
  if (!s.ok()) return s;
  if (!WaitFor([&] { return (*timers)->metrics().acknowledged == 3; })) {
    return Fail("DurableTimer");
  }
  if (s = (*timers)->Stop(); !s.ok()) return s;
  return AddMetrics(scrape, (*timers)->metrics(), {{"keyspace", "prom"}});
}

int Main(bool with_durable) {
  auto scrape = PrometheusExposition::Create();
  if (!scrape.ok()) {
    fmt::print(stderr, "{}\n", scrape.status().ToString());
    return 1;
  }
  absl::Status s = AddTimer(*scrape);
  s.Update(AddLocalTimer(*scrape));
  s.Update(AddIdleTracker(*scrape));
  if (with_durable) s.Update(AddDurableTimer(*scrape));
  if (!s.ok()) {
    fmt::print(stderr, "{}\n", s.ToString());
    return 1;
  }
  fmt::print("{}", scrape->ToString());
  return 0;
}

}  // namespace
}  // namespace tickwheel

int main(int argc, char** argv) {
  return tickwheel::Main(argc > 1 && std::string_view(argv[1]) == "--durable");
}
