// durable/testing/worker_role.h
// -----------------------------------------------------------------------------
// Test-only. A worker process for the multi-process tests, the benchmark and
// the demo: the role "durable_worker" connects a DurableTimer with the
// options of a WorkerConfig (passed in its environment), starts delivering
// with a handler that records what it does in an EventLog, and stops when
// it gets SIGTERM (a clean Stop()) -- or dies when it gets SIGKILL.
//
// Events it writes (child_process.h, "kind pid id a b"):
//   ready    -        0        0        connected and delivering
//   start    <id>     attempt  monotonic ns at the handler's start
//   end      <id>     attempt  1 if the handler returned OK
//   stopped  -        delivered acknowledged   after Stop() returned
//   misses   -        start_window_misses redelivered   after Stop()
//   lateness -        p50 us   p99 us   after Stop(), from metrics()
//   latemax  -        max us   count
// With `record_deliveries` false (the benchmark) there are no start and end
// events: the handler returns OK at once.

#ifndef TICKWHEEL_DURABLE_TESTING_WORKER_ROLE_H_
#define TICKWHEEL_DURABLE_TESTING_WORKER_ROLE_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/child_process.h"

namespace tickwheel::durable::testing {

struct WorkerConfig {
  std::string redis;  // the server's uri()
  // DurableTimerOptions::cluster_nodes ("host:port" each); empty: `redis`.
  std::vector<std::string> cluster_nodes;
  std::string keyspace = "tw-test";
  int shards = 4;
  absl::Duration lease = absl::Seconds(2);
  absl::Duration poll_interval = absl::Milliseconds(50);
  absl::Duration retry_backoff = absl::Milliseconds(100);
  int handler_threads = 4;
  int max_in_flight = 64;
  std::string events;  // the EventLog's path
  // The handler sleeps this long before it returns.
  absl::Duration handler_sleep = absl::ZeroDuration();
  // The handler fails (returns not OK) while attempt <= this.
  int fail_attempts = 0;
  // Write a start and an end event per delivery.
  bool record_deliveries = true;
  // DurableTimerOptions::owner (empty: the default).
  std::string owner;
  // DurableTimerOptions::schedule_hints.
  bool schedule_hints = true;

  DurableTimerOptions Options() const;
  EnvVars ToEnv() const;
  static WorkerConfig FromEnv();
};

// Spawns this program as a "durable_worker" with `config`; its output goes
// to `output_path`.
absl::StatusOr<pid_t> SpawnWorker(const WorkerConfig& config,
                                  const std::string& output_path);

}  // namespace tickwheel::durable::testing

#endif  // TICKWHEEL_DURABLE_TESTING_WORKER_ROLE_H_
