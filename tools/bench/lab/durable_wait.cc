// tools/bench/lab/durable_wait.cc
// -----------------------------------------------------------------------------
// What DurableTimerOptions::min_replicas_acked costs a writer: Schedule()
// calls per second on a Redis Cluster of this program's own (three masters,
// three replicas, appendfsync always, durable/testing's RedisCluster), with
// min_replicas_acked = 0 and = 1, with 1 and with 4 calling threads, and
// ScheduleMany() in batches of 1,000. The settings run interleaved, round
// after round, so that a machine whose load drifts spreads every setting
// alike; each run prints its rate, and the end a table of median and range
// per setting.
//
//   bazel run -c opt --config=opt //tools/bench/lab:durable_wait --
//       [--rounds=5] [--calls=2000]

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_cluster.h"

namespace tickwheel::durable {
namespace {

using testing::RedisCluster;

struct Setting {
  std::string name;
  int min_replicas_acked = 0;
  int threads = 1;  // Schedule() callers; 0: ScheduleMany()
};

DurableTimerOptions Options(const RedisCluster& cluster, std::string keyspace,
                            int min_replicas_acked) {
  DurableTimerOptions o;
  o.cluster_nodes = cluster.seeds();
  o.keyspace = std::move(keyspace);
  o.shards = 16;
  o.redis_timeout = absl::Seconds(10);
  o.min_replicas_acked = min_replicas_acked;
  o.replica_ack_timeout = absl::Seconds(5);
  return o;
}

// Calls per second (timers per second for ScheduleMany()); exits on an
// error: a shortfall would make the figure meaningless.
double Run(const RedisCluster& cluster, const Setting& s, int calls,
           const std::string& keyspace) {
  auto timers =
      DurableTimer::Connect(Options(cluster, keyspace, s.min_replicas_acked));
  if (!timers.ok()) {
    std::fprintf(stderr, "Connect: %s\n", timers.status().ToString().c_str());
    std::exit(1);
  }
  std::atomic<int> errors{0};
  const absl::Time start = absl::Now();
  if (s.threads == 0) {
    std::vector<ScheduleEntry> batch;
    for (int i = 0; i < calls; ++i) {
      batch.push_back({"m" + std::to_string(i),
                       absl::Now() + absl::Hours(1),
                       "payload",
                       {}});
      if (batch.size() == 1000 || i + 1 == calls) {
        if (!(*timers)->ScheduleMany(batch).ok()) ++errors;
        batch.clear();
      }
    }
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < s.threads; ++t) {
      pool.emplace_back([&, t] {
        for (int i = t; i < calls; i += s.threads) {
          const absl::Status st = (*timers)->ScheduleAfter(
              "s" + std::to_string(i), absl::Hours(1), "payload");
          if (!st.ok()) {
            std::fprintf(stderr, "Schedule: %s\n", st.ToString().c_str());
            ++errors;
          }
        }
      });
    }
    for (std::thread& th : pool) th.join();
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (errors > 0) {
    std::fprintf(stderr, "%s: %d calls failed\n", s.name.c_str(),
                 errors.load());
    std::exit(1);
  }
  return calls / seconds;
}

int Main(int argc, char** argv) {
  int rounds = 5;
  int calls = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    } else if (a.rfind("--calls=", 0) == 0) {
      calls = std::max(1, std::atoi(a.c_str() + 8));
    } else {
      std::fprintf(stderr, "usage: durable_wait [--rounds=N] [--calls=N]\n");
      return 2;
    }
  }
  auto cluster = RedisCluster::Start();
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return 1;
  }
  const std::vector<Setting> settings = {
      {"Schedule(), 1 thread, min_replicas_acked 0", 0, 1},
      {"Schedule(), 1 thread, min_replicas_acked 1", 1, 1},
      {"Schedule(), 4 threads, min_replicas_acked 0", 0, 4},
      {"Schedule(), 4 threads, min_replicas_acked 1", 1, 4},
      {"ScheduleMany() x1000, min_replicas_acked 0", 0, 0},
      {"ScheduleMany() x1000, min_replicas_acked 1", 1, 0},
  };
  std::map<std::string, std::vector<double>> rates;
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < settings.size(); ++k) {
      const Setting& s = settings[k];
      const double rate = Run(**cluster, s, s.threads == 0 ? 20 * calls : calls,
                              fmt::format("wait-{}-{}", r, k));
      rates[s.name].push_back(rate);
      std::printf("round %d  %-46s %9.0f/s\n", r + 1, s.name.c_str(), rate);
      std::fflush(stdout);
    }
  }
  std::printf("\n| setting | runs | median | range |\n|---|---|---|---|\n");
  for (const Setting& s : settings) {
    std::vector<double> v = rates[s.name];
    std::sort(v.begin(), v.end());
    std::printf("| %s | %zu | %.0f/s | %.0f-%.0f/s |\n", s.name.c_str(),
                v.size(), v[v.size() / 2], v.front(), v.back());
  }
  return 0;
}

}  // namespace
}  // namespace tickwheel::durable

int main(int argc, char** argv) { return tickwheel::durable::Main(argc, argv); }
