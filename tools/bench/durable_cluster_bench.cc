// tools/bench/durable_cluster_bench.cc
// -----------------------------------------------------------------------------
// Do the durable timers (//durable) scale across the masters of a Redis
// Cluster? In one invocation it starts a cluster of its own for each count
// in --masters (1, 3 and 6 by default; durable/testing/redis_cluster.h, no
// replicas unless --replicas says so), all at once, and then, for --rounds
// rounds, measures on each cluster in turn, in this order:
//
//   ceiling        redis-benchmark's ZADD rate on the same cluster (with
//                  --cluster from two masters on, its clients spread over
//                  the masters; against the one master otherwise): what the
//                  cluster itself does on this machine
//   schedule_many  ScheduleMany() in batches of 1000 from --schedule_threads
//                  threads of this process
//   deliver        timers already scheduled, all due at one instant,
//                  delivered by --processes worker processes (this binary
//                  spawned again) with a handler that returns at once:
//                  deliveries per second from the deadline to Pending() 0
//
// The keyspace has --shards shards (at least the masters, so every master
// holds some); the header says how many land on each master. Beside the
// rates it gives what they cost: the masters' CPU per operation (INFO cpu)
// and the clients' (getrusage), the busiest master's share of the masters',
// the commands per operation, and how busy the machine's CPUs were
// meanwhile (/proc/stat): when they are all busy with one master, more
// masters cannot go faster, whatever the client does. From the busiest
// master's CPU per operation it derives the rate a machine with a core per
// master would allow: whether the work spreads over the masters, apart
// from the cores this machine has. A noisy machine's
// load drifts: taking the clusters in turn within each round exposes every
// master count to it alike. The table gives each figure's median over the
// rounds with its range, and the ratios of 3 and 6 masters over 1 taken
// round by round; then the goals, and the correctness checks (every timer
// acknowledged, nothing pending at the end): exit status 1 when a check
// fails, 2 on a bad flag.
//
//   bazel run -c opt --config=opt //tools/bench:durable_cluster_bench
//   bazel run -c opt --config=opt //tools/bench:durable_cluster_bench --
//       --quick=1
//
// docs/DURABLE.md, "Scale across masters", has the figures and what bounds
// them.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/durable/cluster_slots.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/testing/child_process.h"
#include "tickwheel/durable/testing/redis_cluster.h"
#include "tickwheel/durable/testing/worker_role.h"
#include "tools/bench/durable_bench_args.h"

extern char** environ;

namespace tickwheel::durable {
namespace {

using testing::Event;
using testing::EventLog;
using testing::RedisCluster;
using testing::WorkerConfig;

constexpr char kKeyspace[] = "scale";

struct Flags {
  bool quick = false;
  std::vector<int> masters = {1, 3, 6};
  int replicas = 0;
  std::string appendfsync = "always";
  int shards = 48;
  int ceiling_n = 150000;
  int clients = 60;  // redis-benchmark's, over all masters
  int pipeline = 16;
  int many_n = 100000;
  int schedule_threads = 3;
  int deliver_n = 60000;
  int processes = 3;
  int handler_threads = 8;
  int rounds = 3;
};

void PrintUsage() {
  fmt::print(
      "usage: durable_cluster_bench [--quick=1] [--masters=1,3,6] "
      "[--replicas=0] [--rounds=3]\n"
      "         [--appendfsync=always|everysec|no] [--shards=48]\n"
      "         [--ceiling_n=N] [--clients=60] [--pipeline=16]\n"
      "         [--many_n=N] [--schedule_threads=3]\n"
      "         [--deliver_n=N] [--processes=3] [--handler_threads=8]\n");
}

// "1,3,6": each in [1, 64].
bool ParseMasters(const std::string& value, std::vector<int>* out) {
  out->clear();
  std::stringstream list(value);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 64) return false;
    out->push_back(static_cast<int>(n));
  }
  return !out->empty();
}

// One --name=value; false (after saying so) when the name is unknown or the
// value does not fit it.
bool SetFlag(const std::string& arg, size_t eq, Flags* f) {
  const std::string name = arg.substr(2, eq - 2);
  const std::string value = arg.substr(eq + 1);
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  const bool numeric = !value.empty() && *end == '\0' && n >= 0;
  const bool positive = numeric && n > 0 && n <= 100'000'000;
  const std::map<std::string, int*> counts = {
      {"ceiling_n", &f->ceiling_n},
      {"clients", &f->clients},
      {"pipeline", &f->pipeline},
      {"many_n", &f->many_n},
      {"schedule_threads", &f->schedule_threads},
      {"deliver_n", &f->deliver_n},
      {"processes", &f->processes},
      {"handler_threads", &f->handler_threads},
      {"rounds", &f->rounds},
      {"shards", &f->shards}};
  if (auto it = counts.find(name); it != counts.end() && positive) {
    *it->second = static_cast<int>(n);
  } else if (name == "quick" && numeric) {
    f->quick = n != 0;
  } else if (name == "masters" && ParseMasters(value, &f->masters)) {
  } else if (name == "replicas" && numeric && n <= 4) {
    f->replicas = static_cast<int>(n);
  } else if (name == "appendfsync" &&
             (value == "always" || value == "everysec" || value == "no")) {
    f->appendfsync = value;
  } else {
    fmt::print(stderr, "durable_cluster_bench: bad flag {}\n", arg);
    return false;
  }
  return true;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  if (!bench::ParseNameValueArgs(argc, argv, PrintUsage,
                                 [&](const std::string& arg, size_t eq) {
                                   return SetFlag(arg, eq, f);
                                 })) {
    return false;
  }
  const int most = *std::max_element(f->masters.begin(), f->masters.end());
  if (f->shards < most || f->shards > 1024) {
    fmt::print(stderr,
               "durable_cluster_bench: --shards={} must be in [{}, 1024]: "
               "fewer shards than masters leave masters idle\n",
               f->shards, most);
    return false;
  }
  if (f->quick) {
    f->ceiling_n = std::min(f->ceiling_n, 2000);
    f->many_n = std::min(f->many_n, 2000);
    f->deliver_n = std::min(f->deliver_n, 500);
    f->rounds = std::min(f->rounds, 2);
  }
  return true;
}

std::vector<std::string> failures;

void Check(bool ok, std::string what) {
  if (!ok) failures.push_back(std::move(what));
}

// The machine's CPU time so far (/proc/stat, all CPUs): busy and total, in
// clock ticks.
struct CpuTicks {
  int64_t busy = 0;
  int64_t total = 0;
};

CpuTicks MachineCpu() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  CpuTicks t;
  in >> cpu;
  for (int i = 0; i < 8; ++i) {
    int64_t v = 0;
    in >> v;
    t.total += v;
    if (i != 3 && i != 4) t.busy += v;  // idle and iowait are not busy
  }
  return t;
}

// Share of the machine's CPUs busy between `before` and now, in percent.
double BusyPercent(const CpuTicks& before) {
  const CpuTicks now = MachineCpu();
  const int64_t total = now.total - before.total;
  return total > 0 ? 100.0 * static_cast<double>(now.busy - before.busy) /
                         static_cast<double>(total)
                   : 0;
}

// A number in an INFO reply ("name:value"); 0 when it is not there.
double InfoField(const std::string& info, const std::string& name) {
  const size_t at = info.find("\r\n" + name + ":");
  return at == std::string::npos
             ? 0
             : std::strtod(info.c_str() + at + name.size() + 3, nullptr);
}

// What a master has done so far.
struct MasterCounters {
  double cpu = 0;       // used_cpu_sys + used_cpu_user, seconds
  double commands = 0;  // total_commands_processed
};

std::map<int, MasterCounters> MastersInfo(RedisCluster& cluster) {
  std::map<int, MasterCounters> out;
  for (const int port : cluster.MasterPorts().value_or(std::vector<int>())) {
    absl::StatusOr<internal::RedisReply> info =
        cluster.Command(port, {"INFO", "cpu", "stats"});
    if (!info.ok()) continue;
    out[port] = {InfoField(info->str, "used_cpu_sys") +
                     InfoField(info->str, "used_cpu_user"),
                 InfoField(info->str, "total_commands_processed")};
  }
  return out;
}

// CPU time of this process and of its reaped children, in seconds.
double ClientCpu() {
  double total = 0;
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    total += u.ru_utime.tv_sec + u.ru_stime.tv_sec +
             (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return total;
}

// One measurement: its rate and what it cost.
struct Rate {
  double per_second = 0;  // 0: not measured
  double cpu_busy = 0;    // percent of the machine's CPUs meanwhile
  double redis_us = 0;    // CPU of all masters per operation, microseconds
  double busiest = 0;     // the busiest master's share of that, percent
  double commands = 0;    // commands all masters processed per operation
  // CPU of the clients per operation, microseconds: this process, and the
  // worker processes or redis-benchmark (whole lives: start and stop too).
  double client_us = 0;
};

// Takes the machine's and the masters' CPU times when it is made, and the
// differences when Finish() is called.
class Meter {
 public:
  explicit Meter(RedisCluster& cluster)
      : cluster_(cluster),
        machine_(MachineCpu()),
        masters_(MastersInfo(cluster)),
        client_(ClientCpu()) {}

  // The clients' CPU per operation since the meter was made; call it once
  // the clients that ran are reaped.
  double ClientUs(double operations) const {
    return operations > 0 ? (ClientCpu() - client_) * 1e6 / operations : 0;
  }

  Rate Finish(double operations, double seconds) const {
    Rate r;
    r.per_second = seconds > 0 ? operations / seconds : 0;
    r.cpu_busy = BusyPercent(machine_);
    double sum = 0;
    double most = 0;
    double commands = 0;
    for (const auto& [port, now] : MastersInfo(cluster_)) {
      const auto before = masters_.find(port);
      if (before == masters_.end()) continue;
      const double used = now.cpu - before->second.cpu;
      sum += used;
      most = std::max(most, used);
      commands += now.commands - before->second.commands;
    }
    r.redis_us = operations > 0 ? sum * 1e6 / operations : 0;
    r.commands = operations > 0 ? commands / operations : 0;
    r.busiest = sum > 0 ? 100 * most / sum : 0;
    return r;
  }

 private:
  RedisCluster& cluster_;
  const CpuTicks machine_;
  const std::map<int, MasterCounters> masters_;
  const double client_;
};

// redis-benchmark's ZADD rate on `cluster`, or 0 when it cannot run. Every
// ZADD goes to one sorted set per master ({tag} is each master's hash tag
// with --cluster); redis-benchmark refuses --cluster with one master, so a
// single master gets the same command without it.
Rate Ceiling(RedisCluster& cluster, const Flags& f, const std::string& dir) {
  const std::string out = dir + "/redis-benchmark.csv";
  std::vector<std::string> args = {"redis-benchmark",
                                   "-h",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(cluster.nodes()[0]->port()),
                                   "-n",
                                   std::to_string(f.ceiling_n),
                                   "-c",
                                   std::to_string(f.clients),
                                   "-P",
                                   std::to_string(f.pipeline),
                                   "-r",
                                   "1000000",
                                   "--csv"};
  if (cluster.masters() > 1) args.push_back("--cluster");
  args.insert(args.end(),
              {"ZADD", "bench:{tag}", "__rand_int__", "element:__rand_int__"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const Meter meter(cluster);
  const absl::Time start = absl::Now();
  const int rc = posix_spawnp(&pid, "redis-benchmark", &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return {};
  int status = 0;
  waitpid(pid, &status, 0);
  // Its own figure for the rate; the meter's for the costs.
  Rate r =
      meter.Finish(f.ceiling_n, absl::ToDoubleSeconds(absl::Now() - start));
  r.client_us = meter.ClientUs(f.ceiling_n);
  r.per_second = 0;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    // "ZADD bench:{tag} ...","<requests per second>",...
    if (line.rfind("\"ZADD ", 0) == 0) {
      const size_t at = line.find("\",\"");
      if (at != std::string::npos) {
        r.per_second = std::strtod(line.c_str() + at + 3, nullptr);
      }
    }
  }
  Check(r.per_second > 0 || f.quick,
        "redis-benchmark gave no ZADD rate: " + out);
  return r;
}

DurableTimerOptions BenchOptions(const RedisCluster& cluster, const Flags& f) {
  DurableTimerOptions o;
  o.cluster_nodes = cluster.seeds();
  o.keyspace = kKeyspace;
  o.shards = f.shards;
  o.redis_timeout = absl::Seconds(10);
  return o;
}

// Schedules `n` timers due at `deadline` with ScheduleMany() in batches of
// 1000 from `threads` threads; true when every call succeeded.
bool ScheduleAll(DurableTimer& timers, int n, int threads, absl::Time deadline,
                 const std::string& prefix) {
  std::vector<ScheduleEntry> entries;
  entries.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    entries.push_back({prefix + std::to_string(i), deadline, "payload", {}});
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1000)) < entries.size();) {
        const size_t len = std::min<size_t>(1000, entries.size() - i);
        if (!timers.ScheduleMany(std::span(entries).subspan(i, len)).ok()) {
          ok = false;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return ok;
}

// Empties every master.
void Flush(RedisCluster& cluster) {
  for (const int port : cluster.MasterPorts().value_or(std::vector<int>())) {
    (void)cluster.Command(port, {"FLUSHALL"});
  }
}

Rate ScheduleManyRate(RedisCluster& cluster, const Flags& f) {
  auto timers = DurableTimer::Connect(BenchOptions(cluster, f)).value();
  const Meter meter(cluster);
  const absl::Time start = absl::Now();
  const bool ok = ScheduleAll(*timers, f.many_n, f.schedule_threads,
                              absl::Now() + absl::Hours(1), "m");
  Rate r = meter.Finish(f.many_n, absl::ToDoubleSeconds(absl::Now() - start));
  r.client_us = meter.ClientUs(f.many_n);
  Check(ok, "ScheduleMany() failed");
  Check(timers->Pending().value_or(-1) == f.many_n,
        "ScheduleMany(): pending count");
  Flush(cluster);
  return r;
}

struct Fleet {
  std::vector<pid_t> pids;
  std::string events;
  std::string out;
};

Fleet SpawnFleet(const RedisCluster& cluster, const Flags& f,
                 const std::string& dir) {
  Fleet fleet;
  // A file of its own per fleet: the events of one run are counted alone.
  static int fleets = 0;
  const std::string name =
      fmt::format("deliver-{}m-{}", cluster.masters(), ++fleets);
  fleet.events = dir + "/" + name + ".events";
  fleet.out = dir + "/" + name + ".out";
  WorkerConfig w;
  w.cluster_nodes = cluster.seeds();
  w.keyspace = kKeyspace;
  w.shards = f.shards;
  w.lease = absl::Seconds(30);
  w.poll_interval = absl::Milliseconds(200);
  w.handler_threads = f.handler_threads;
  w.max_in_flight = 1024;
  w.events = fleet.events;
  w.record_deliveries = false;
  for (int i = 0; i < f.processes; ++i) {
    absl::StatusOr<pid_t> pid = testing::SpawnWorker(w, fleet.out);
    if (pid.ok()) fleet.pids.push_back(*pid);
  }
  const bool ready = testing::WaitForEvents(
      fleet.events, absl::Seconds(60), [&](const std::vector<Event>& e) {
        return std::count_if(e.begin(), e.end(), [](const Event& x) {
                 return x.kind == "ready";
               }) == f.processes;
      });
  Check(ready && static_cast<int>(fleet.pids.size()) == f.processes,
        "worker processes did not start: " + fleet.out);
  return fleet;
}

// Stops the fleet; returns the timers its processes acknowledged.
int64_t StopFleet(const Fleet& fleet) {
  for (pid_t pid : fleet.pids) testing::SignalChild(pid, SIGTERM);
  for (pid_t pid : fleet.pids) {
    Check(testing::WaitChild(pid, absl::Seconds(60)).ok(),
          "a worker did not stop");
  }
  int64_t acknowledged = 0;
  for (const Event& e : EventLog::Read(fleet.events)) {
    if (e.kind == "stopped") acknowledged += e.b;
  }
  return acknowledged;
}

Rate DeliverRate(RedisCluster& cluster, const Flags& f, double many_rate,
                 const std::string& dir) {
  const Fleet fleet = SpawnFleet(cluster, f, dir);
  auto timers = DurableTimer::Connect(BenchOptions(cluster, f)).value();
  // All due at one instant, after they are all scheduled.
  const absl::Duration lead =
      absl::Seconds(1) +
      absl::Seconds(1.5 * f.deliver_n / std::max(many_rate, 1.0));
  const absl::Time due = absl::Now() + lead;
  Check(ScheduleAll(*timers, f.deliver_n, f.schedule_threads, due, "d"),
        "deliver: ScheduleMany() failed");
  // On a loaded machine scheduling may end after the deadline: the clock
  // starts when both have passed.
  absl::SleepFor(due - absl::Now());
  const absl::Time start = std::max(due, absl::Now());
  const Meter meter(cluster);
  absl::Time done = absl::InfiniteFuture();
  const absl::Time give_up = start + absl::Seconds(120);
  while (absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
    if (timers->Pending().value_or(-1) == 0) {
      done = absl::Now();
      break;
    }
  }
  Check(done != absl::InfiniteFuture(), "deliver: timers left pending");
  // The masters' CPU includes the Pending() polls: one HLEN per shard every
  // 20 ms, negligible.
  Rate r = meter.Finish(f.deliver_n,
                        std::max(1e-9, absl::ToDoubleSeconds(done - start)));
  const int64_t acknowledged = StopFleet(fleet);
  r.client_us = meter.ClientUs(f.deliver_n);
  Check(acknowledged == f.deliver_n,
        fmt::format("deliver, {} masters: {} acknowledged of {}",
                    cluster.masters(), acknowledged, f.deliver_n));
  Flush(cluster);
  return r;
}

// How many of the keyspace's shards each master holds, "5/6/5".
std::string ShardsPerMaster(RedisCluster& cluster, int shards) {
  std::map<int, int> count;
  for (const int port : cluster.MasterPorts().value_or(std::vector<int>())) {
    count[port] = 0;
  }
  for (const internal::ShardKeys& k :
       internal::MakeShardKeys(kKeyspace, shards)) {
    if (absl::StatusOr<int> port =
            cluster.MasterOfSlot(internal::KeyHashSlot(k.due));
        port.ok()) {
      ++count[*port];
    }
  }
  std::string out;
  for (const auto& [port, n] : count) {
    out += fmt::format("{}{}", out.empty() ? "" : "/", n);
  }
  return out;
}

// One cluster and its measurements, one per round.
struct Subject {
  std::unique_ptr<RedisCluster> cluster;
  std::string shards;  // per master, "16/16/16"
  std::vector<Rate> ceiling, many, deliver;
};

std::optional<Subject> StartCluster(const Flags& f, int masters) {
  RedisCluster::Options o;
  o.masters = masters;
  o.replicas = f.replicas;
  o.extra_args = {"--appendfsync", f.appendfsync};
  absl::StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::Start(o);
  if (!started.ok()) {
    Check(false,
          fmt::format("{} masters: {}", masters, started.status().ToString()));
    return std::nullopt;
  }
  Subject s;
  s.cluster = *std::move(started);
  s.shards = ShardsPerMaster(*s.cluster, f.shards);
  return s;
}

// One round on one cluster: its three measurements, in order.
void MeasureRound(const Flags& f, int round, Subject& s,
                  const std::string& dir) {
  RedisCluster& cluster = *s.cluster;
  fmt::print("round {}, {} master(s): ", round, cluster.masters());
  std::fflush(stdout);
  s.ceiling.push_back(Ceiling(cluster, f, dir));
  Flush(cluster);
  fmt::print("redis-benchmark {:.0f}/s, ", s.ceiling.back().per_second);
  std::fflush(stdout);
  s.many.push_back(ScheduleManyRate(cluster, f));
  fmt::print("ScheduleMany() {:.0f}/s, ", s.many.back().per_second);
  std::fflush(stdout);
  s.deliver.push_back(DeliverRate(cluster, f, s.many.back().per_second, dir));
  fmt::print("deliveries {:.0f}/s\n", s.deliver.back().per_second);
  std::fflush(stdout);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// `field` of each round's Rate.
std::vector<double> Field(const std::vector<Rate>& rates, double Rate::*field) {
  std::vector<double> out;
  for (const Rate& r : rates) out.push_back(r.*field);
  return out;
}

// "median [min-max]" of `v`, each with `format`; the median alone for one.
std::string Spread(const std::vector<double>& v, const char* unit,
                   int decimals) {
  if (v.empty()) return "n/a";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out = fmt::format("{:.{}f}{}", Median(v), decimals, unit);
  if (v.size() > 1) {
    out += fmt::format(" [{:.{}f}-{:.{}f}]", *lo, decimals, *hi, decimals);
  }
  return out;
}

// Per round, the rate of `a` over that of `b` (measured minutes apart at
// most, so less exposed to the machine's load drifting than over the whole
// run).
std::vector<double> Ratios(const std::vector<Rate>& a,
                           const std::vector<Rate>& b) {
  std::vector<double> out;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (b[i].per_second > 0) out.push_back(a[i].per_second / b[i].per_second);
  }
  return out;
}

constexpr char kRow[] = "{:<8}  {:>30}  {:>30}  {:>30}\n";

void PrintTable(const std::vector<Subject>& subjects) {
  const int rounds = subjects.empty() ? 0 : subjects[0].many.size();
  fmt::print("\nRates: the median of {} round(s) [lowest-highest]\n", rounds);
  fmt::print(kRow, "masters", "ScheduleMany()", "deliveries",
             "redis-benchmark ZADD");
  for (const Subject& s : subjects) {
    fmt::print(kRow, s.cluster->masters(),
               Spread(Field(s.many, &Rate::per_second), "/s", 0),
               Spread(Field(s.deliver, &Rate::per_second), "/s", 0),
               Spread(Field(s.ceiling, &Rate::per_second), "/s", 0));
  }
  const Subject* one = nullptr;
  for (const Subject& s : subjects) {
    if (s.cluster->masters() == 1) one = &s;
  }
  for (const Subject& s : subjects) {
    if (one == nullptr || &s == one) continue;
    fmt::print(kRow, fmt::format("{}/1", s.cluster->masters()),
               Spread(Ratios(s.many, one->many), "x", 2),
               Spread(Ratios(s.deliver, one->deliver), "x", 2),
               Spread(Ratios(s.ceiling, one->ceiling), "x", 2));
  }
  fmt::print(
      "\nCost, medians: Redis CPU per operation (all masters) + the "
      "clients' / the busiest master's share of Redis's / Redis commands per "
      "operation / the machine's CPUs busy\n");
  fmt::print(kRow, "masters", "ScheduleMany()", "deliveries",
             "redis-benchmark ZADD");
  auto cost = [](const std::vector<Rate>& r) {
    return fmt::format(
        "{:.1f}+{:.1f} us / {:.0f}% / {:.2f} / {:.0f}%",
        Median(Field(r, &Rate::redis_us)), Median(Field(r, &Rate::client_us)),
        Median(Field(r, &Rate::busiest)), Median(Field(r, &Rate::commands)),
        Median(Field(r, &Rate::cpu_busy)));
  };
  for (const Subject& s : subjects) {
    fmt::print(kRow, s.cluster->masters(), cost(s.many), cost(s.deliver),
               cost(s.ceiling));
  }
  // Not a measurement: what the figures above imply for a machine with a
  // core per master and the clients on other cores.
  fmt::print(
      "\nBound by the busiest master alone, 1 / (its CPU per operation), "
      "medians: the rate with a core per master and the clients elsewhere\n");
  fmt::print(kRow, "masters", "ScheduleMany()", "deliveries",
             "redis-benchmark ZADD");
  auto bound = [](const std::vector<Rate>& rates) {
    std::vector<double> out;
    for (const Rate& r : rates) {
      const double us = r.redis_us * r.busiest / 100;
      if (us > 0) out.push_back(1e6 / us);
    }
    return out;
  };
  for (const Subject& s : subjects) {
    fmt::print(kRow, s.cluster->masters(), Spread(bound(s.many), "/s", 0),
               Spread(bound(s.deliver), "/s", 0),
               Spread(bound(s.ceiling), "/s", 0));
  }
}

void PrintGoals(const std::vector<Subject>& subjects) {
  const Subject* one = nullptr;
  const Subject* three = nullptr;
  for (const Subject& s : subjects) {
    if (s.cluster->masters() == 1) one = &s;
    if (s.cluster->masters() == 3) three = &s;
  }
  if (three == nullptr) return;
  fmt::print("\nGoals (medians)\n");
  auto goal = [](bool met, const std::string& what) {
    fmt::print("  {}  {}\n", met ? "MET   " : "MISSED", what);
  };
  if (one != nullptr) {
    goal(Median(Ratios(three->deliver, one->deliver)) >= 2.4,
         "deliveries grow >= 2.4x from 1 to 3 masters");
    goal(Median(Ratios(three->many, one->many)) >= 2.4,
         "ScheduleMany() grows >= 2.4x from 1 to 3 masters");
    fmt::print(
        "  (the floor: redis-benchmark ZADD grows {:.2f}x from 1 to 3 "
        "masters on this machine)\n",
        Median(Ratios(three->ceiling, one->ceiling)));
  }
  goal(Median(Field(three->deliver, &Rate::per_second)) >= 100000,
       "3 masters deliver >= 100k timers/s");
}

int ReportChecks() {
  if (failures.empty()) {
    fmt::print("\nCorrectness checks: all passed\n");
    return 0;
  }
  fmt::print("\nCorrectness checks: {} FAILED\n", failures.size());
  for (const std::string& f : failures) fmt::print("  {}\n", f);
  return 1;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  const std::string dir = bench::MakeTempDir("tw-durable-cluster-bench");
  fmt::print(
      "durable_cluster_bench: Redis Clusters of {} master(s) on 127.0.0.1, "
      "{} replica(s) each, appendonly yes, appendfsync {}; {} shards; "
      "redis-benchmark -c {} -P {}; ScheduleMany() from {} threads; "
      "{} worker processes x {} handler threads; {} rounds of {} ZADDs, "
      "{} timers scheduled, {} delivered; logs in {}; {} cores{}\n",
      fmt::join(flags.masters, "/"), flags.replicas, flags.appendfsync,
      flags.shards, flags.clients, flags.pipeline, flags.schedule_threads,
      flags.processes, flags.handler_threads, flags.rounds, flags.ceiling_n,
      flags.many_n, flags.deliver_n, dir, std::thread::hardware_concurrency(),
      flags.quick ? "; --quick: sizes too small to measure anything" : "");
  std::fflush(stdout);
  // Every cluster is up at once, and each round measures them one after
  // another: the machine's other load, which drifts over minutes, then
  // weighs on every master count alike.
  std::vector<Subject> subjects;
  for (const int masters : flags.masters) {
    if (std::optional<Subject> s = StartCluster(flags, masters)) {
      fmt::print("{} master(s): shards per master {}\n", masters, s->shards);
      subjects.push_back(*std::move(s));
    }
  }
  for (int round = 1; round <= flags.rounds; ++round) {
    for (Subject& s : subjects) MeasureRound(flags, round, s, dir);
  }
  PrintTable(subjects);
  PrintGoals(subjects);
  return ReportChecks();
}

}  // namespace
}  // namespace tickwheel::durable

int main(int argc, char** argv) {
  if (std::optional<int> rc = tickwheel::durable::testing::RunRoleIfAsked()) {
    return *rc;
  }
  return tickwheel::durable::Main(argc, argv);
}
