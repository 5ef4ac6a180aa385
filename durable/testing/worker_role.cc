#include "tickwheel/durable/testing/worker_role.h"

#include <pthread.h>
#include <signal.h>

#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::testing {
namespace {

int64_t Millis(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

}  // namespace

DurableTimerOptions WorkerConfig::Options() const {
  DurableTimerOptions o;
  o.redis = redis;
  o.cluster_nodes = cluster_nodes;
  o.keyspace = keyspace;
  o.shards = shards;
  o.lease = lease;
  o.poll_interval = poll_interval;
  o.retry_backoff = retry_backoff;
  o.handler_threads = handler_threads;
  o.max_in_flight = max_in_flight;
  o.redis_timeout = absl::Seconds(2);
  o.owner = owner;
  o.schedule_hints = schedule_hints;
  return o;
}

EnvVars WorkerConfig::ToEnv() const {
  std::string cluster;
  for (const std::string& node : cluster_nodes) {
    cluster += (cluster.empty() ? "" : ",") + node;
  }
  return {{"TW_REDIS", redis},
          {"TW_CLUSTER", cluster},
          {"TW_KEYSPACE", keyspace},
          {"TW_SHARDS", std::to_string(shards)},
          {"TW_LEASE_MS", std::to_string(Millis(lease))},
          {"TW_POLL_MS", std::to_string(Millis(poll_interval))},
          {"TW_BACKOFF_MS", std::to_string(Millis(retry_backoff))},
          {"TW_THREADS", std::to_string(handler_threads)},
          {"TW_MAX_IN_FLIGHT", std::to_string(max_in_flight)},
          {"TW_EVENTS", events},
          {"TW_SLEEP_MS", std::to_string(Millis(handler_sleep))},
          {"TW_FAIL_ATTEMPTS", std::to_string(fail_attempts)},
          {"TW_RECORD", record_deliveries ? "1" : "0"},
          {"TW_OWNER", owner},
          {"TW_HINTS", schedule_hints ? "1" : "0"}};
}

WorkerConfig WorkerConfig::FromEnv() {
  WorkerConfig c;
  c.redis = EnvString("TW_REDIS");
  std::stringstream cluster(EnvString("TW_CLUSTER"));
  for (std::string node; std::getline(cluster, node, ',');) {
    if (!node.empty()) c.cluster_nodes.push_back(node);
  }
  c.keyspace = EnvString("TW_KEYSPACE", c.keyspace);
  c.shards = static_cast<int>(EnvInt("TW_SHARDS", c.shards));
  c.lease = absl::Milliseconds(EnvInt("TW_LEASE_MS", Millis(c.lease)));
  c.poll_interval =
      absl::Milliseconds(EnvInt("TW_POLL_MS", Millis(c.poll_interval)));
  c.retry_backoff =
      absl::Milliseconds(EnvInt("TW_BACKOFF_MS", Millis(c.retry_backoff)));
  c.handler_threads = static_cast<int>(EnvInt("TW_THREADS", c.handler_threads));
  c.max_in_flight =
      static_cast<int>(EnvInt("TW_MAX_IN_FLIGHT", c.max_in_flight));
  c.events = EnvString("TW_EVENTS");
  c.handler_sleep = absl::Milliseconds(EnvInt("TW_SLEEP_MS", 0));
  c.fail_attempts = static_cast<int>(EnvInt("TW_FAIL_ATTEMPTS", 0));
  c.record_deliveries = EnvInt("TW_RECORD", 1) != 0;
  c.owner = EnvString("TW_OWNER");
  c.schedule_hints = EnvInt("TW_HINTS", 1) != 0;
  return c;
}

absl::StatusOr<pid_t> SpawnWorker(const WorkerConfig& config,
                                  const std::string& output_path) {
  return SpawnRole("durable_worker", config.ToEnv(), output_path);
}

TICKWHEEL_DURABLE_ROLE_MAIN(durable_worker) {
  // SIGTERM and SIGINT are taken by sigwait() below, in this thread only:
  // block them before any thread starts, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const WorkerConfig config = WorkerConfig::FromEnv();
  auto log = std::make_shared<EventLog>(config.events);
  absl::StatusOr<std::unique_ptr<DurableTimer>> timers;
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  do {
    timers = DurableTimer::Connect(config.Options());
    if (!timers.ok())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (!timers.ok() && absl::Now() < give_up);
  if (!timers.ok()) {
    fmt::print(stderr, "durable_worker: {}\n", timers.status().ToString());
    return 1;
  }
  const absl::Status started =
      (*timers)->Start([log, config](const FiredTimer& t) -> absl::Status {
        if (!config.record_deliveries) return absl::OkStatus();
        log->Write("start", t.id, t.attempt, RealClock::MonotonicNanos());
        if (config.handler_sleep > absl::ZeroDuration()) {
          absl::SleepFor(config.handler_sleep);
        }
        const bool ok = t.attempt > config.fail_attempts;
        log->Write("end", t.id, t.attempt, ok ? 1 : 0);
        return ok ? absl::OkStatus()
                  : absl::UnavailableError("failing on purpose");
      });
  if (!started.ok()) {
    fmt::print(stderr, "durable_worker: {}\n", started.ToString());
    return 1;
  }
  log->Write("ready", "-");
  int signo = 0;
  sigwait(&stop_signals, &signo);
  (void)(*timers)->Stop();
  const DurableMetrics m = (*timers)->metrics();
  log->Write("stopped", "-", m.delivered, m.acknowledged);
  log->Write("misses", "-", m.start_window_misses, m.redelivered);
  log->Write("lateness", "-",
             absl::ToInt64Microseconds(m.lateness.Percentile(0.5)),
             absl::ToInt64Microseconds(m.lateness.Percentile(0.99)));
  log->Write("latemax", "-", absl::ToInt64Microseconds(m.lateness.max()),
             m.lateness.count());
  return 0;
}

}  // namespace tickwheel::durable::testing
