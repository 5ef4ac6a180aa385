// tools/bench/durable_bench.cc
// -----------------------------------------------------------------------------
// The durable timers (//durable) against the ceiling of the Redis they run
// on. It starts a redis-server of its own (durable/testing/redis_server.h,
// appendonly yes, appendfsync as --appendfsync says), measures that
// server's own ZADD rate with redis-benchmark (50 clients, pipelines of 16)
// -- the ceiling: a durable timer is at least a sorted-set insert -- and
// then, on the same server:
//
//   schedule        Schedule() from 1 thread and from 4, one round trip each
//   schedule_many   ScheduleMany() in batches of 1000
//   deliver         timers already scheduled, all due at one instant,
//                   delivered by 1 and by 3 worker processes (this binary
//                   spawned again) with a handler that returns at once:
//                   deliveries per second from the deadline to Pending() 0
//   lateness        delivery start - deadline in one worker process, for
//                   timers scheduled well ahead (claimed ahead, held in the
//                   local Timer) and for timers scheduled by another process
//                   at short notice, due sooner than the poll interval: with
//                   schedule hints (the default), and without (found by
//                   polling)
//
// It prints one table with each rate over the ceiling, the goals, and checks
// correctness (every timer acknowledged, nothing pending at the end): exit
// status 1 when a check fails, 2 on a bad flag.
//
//   bazel run -c opt --config=opt //tools/bench:durable_bench
//   bazel run -c opt --config=opt //tools/bench:durable_bench -- --quick=1
//
// docs/DURABLE.md has the figures and what bounds them.

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
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/child_process.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/worker_role.h"
#include "tools/bench/durable_bench_args.h"

extern char** environ;

namespace tickwheel::durable {
namespace {

using testing::Event;
using testing::EventLog;
using testing::RedisServer;
using testing::WorkerConfig;

struct Flags {
  bool quick = false;
  std::string appendfsync = "always";
  int ceiling_n = 200000;
  int schedule_n = 2000;
  int many_n = 200000;
  int deliver_n = 100000;
  int lateness_n = 2000;
  std::string only;    // comma-separated workloads; empty: all
  bool stats = false;  // print Redis's per-command statistics at the end
  bool Runs(const std::string& w) const {
    return only.empty() ||
           ("," + only + ",").find("," + w + ",") != std::string::npos;
  }
};

void PrintUsage() {
  fmt::print(
      "usage: durable_bench [--quick=1] "
      "[--appendfsync=always|everysec|no]\n"
      "         [--ceiling_n=N] [--schedule_n=N] [--many_n=N]\n"
      "         [--deliver_n=N] [--lateness_n=N] [--stats=1]\n"
      "         "
      "[--only=ceiling,schedule,schedule_many,deliver,lateness]\n");
}

// --only's value: every name in the list is a workload.
bool KnownWorkloads(const std::string& list) {
  std::stringstream names(list);
  std::string w;
  while (std::getline(names, w, ',')) {
    if (w != "ceiling" && w != "schedule" && w != "schedule_many" &&
        w != "deliver" && w != "lateness") {
      fmt::print(stderr, "durable_bench: unknown workload {}\n", w);
      return false;
    }
  }
  return true;
}

// One --name=value; false (after saying so) when the name is unknown or the
// value does not fit it.
bool SetFlag(const std::string& arg, size_t eq, Flags* f) {
  const std::string name = arg.substr(2, eq - 2);
  const std::string value = arg.substr(eq + 1);
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  const bool numeric = end != nullptr && *end == '\0' && n >= 0;
  if (name == "quick" && numeric) {
    f->quick = n != 0;
  } else if (name == "appendfsync" &&
             (value == "always" || value == "everysec" || value == "no")) {
    f->appendfsync = value;
  } else if (name == "ceiling_n" && numeric && n > 0) {
    f->ceiling_n = static_cast<int>(n);
  } else if (name == "schedule_n" && numeric && n > 0) {
    f->schedule_n = static_cast<int>(n);
  } else if (name == "many_n" && numeric && n > 0) {
    f->many_n = static_cast<int>(n);
  } else if (name == "deliver_n" && numeric && n > 0) {
    f->deliver_n = static_cast<int>(n);
  } else if (name == "lateness_n" && numeric && n > 0) {
    f->lateness_n = static_cast<int>(n);
  } else if (name == "only") {
    if (!KnownWorkloads(value)) return false;
    f->only = value;
  } else if (name == "stats" && numeric) {
    f->stats = n != 0;
  } else {
    fmt::print(stderr, "durable_bench: bad flag {}\n", arg);
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
  if (f->quick) {
    f->ceiling_n = std::min(f->ceiling_n, 2000);
    f->schedule_n = std::min(f->schedule_n, 200);
    f->many_n = std::min(f->many_n, 2000);
    f->deliver_n = std::min(f->deliver_n, 500);
    f->lateness_n = std::min(f->lateness_n, 40);
  }
  return true;
}

struct Row {
  std::string metric;
  std::string value;
  std::string vs_ceiling;
};

std::vector<Row> rows;
std::vector<std::string> failures;

void Check(bool ok, std::string what) {
  if (!ok) failures.push_back(std::move(what));
}

std::string Rate(double per_second) {
  return fmt::format("{:.0f}/s", per_second);
}

std::string Ratio(double rate, double ceiling) {
  return ceiling > 0 ? fmt::format("{:.2f}x", rate / ceiling) : "n/a";
}

// redis-benchmark's ZADD rate against `redis`, or 0 when it cannot run.
double Ceiling(const RedisServer& redis, int n, const std::string& dir) {
  const std::string out = dir + "/redis-benchmark.csv";
  std::vector<std::string> args = {"redis-benchmark",
                                   "-h",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(redis.port()),
                                   "-t",
                                   "zadd",
                                   "-n",
                                   std::to_string(n),
                                   "-P",
                                   "16",
                                   "-r",
                                   "1000000",
                                   "--csv"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "redis-benchmark", &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return 0;
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("\"ZADD\",\"", 0) == 0) {
      return std::strtod(line.c_str() + 8, nullptr);
    }
  }
  return 0;
}

void Flush(RedisServer& redis) { (void)redis.Command({"FLUSHALL"}); }

DurableTimerOptions BenchOptions(const RedisServer& redis) {
  DurableTimerOptions o;
  o.redis = redis.uri();
  o.keyspace = "bench";
  o.redis_timeout = absl::Seconds(10);
  return o;
}

double ScheduleRate(RedisServer& redis, int n, int threads) {
  auto timers = DurableTimer::Connect(BenchOptions(redis)).value();
  std::atomic<int> errors{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += threads) {
        if (!timers
                 ->ScheduleAfter("s" + std::to_string(i), absl::Hours(1),
                                 "payload")
                 .ok()) {
          ++errors;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  Check(errors == 0, "Schedule() failed");
  Check(timers->Pending().value_or(-1) == n, "Schedule(): pending count");
  Flush(redis);
  return n / seconds;
}

std::vector<ScheduleEntry> Entries(int n, absl::Time deadline,
                                   const std::string& prefix) {
  std::vector<ScheduleEntry> entries;
  entries.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    entries.push_back({prefix + std::to_string(i), deadline, "payload"});
  }
  return entries;
}

double ScheduleManyRate(RedisServer& redis, int n) {
  auto timers = DurableTimer::Connect(BenchOptions(redis)).value();
  const std::vector<ScheduleEntry> entries =
      Entries(n, absl::Now() + absl::Hours(1), "m");
  const absl::Time start = absl::Now();
  bool ok = true;
  for (size_t i = 0; i < entries.size(); i += 1000) {
    const size_t len = std::min<size_t>(1000, entries.size() - i);
    ok = ok && timers->ScheduleMany(std::span(entries).subspan(i, len)).ok();
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  Check(ok, "ScheduleMany() failed");
  Check(timers->Pending().value_or(-1) == n, "ScheduleMany(): pending count");
  Flush(redis);
  return n / seconds;
}

struct Fleet {
  std::vector<pid_t> pids;
  std::string events;
  std::string out;
};

Fleet SpawnFleet(const RedisServer& redis, int processes,
                 const std::string& dir, const std::string& name,
                 bool schedule_hints = true) {
  Fleet f;
  f.events = dir + "/" + name + ".events";
  f.out = dir + "/" + name + ".out";
  WorkerConfig w;
  w.redis = redis.uri();
  w.keyspace = "bench";
  w.shards = 16;
  w.lease = absl::Seconds(30);
  w.poll_interval = absl::Milliseconds(200);
  w.handler_threads = 8;
  w.max_in_flight = 1024;
  w.events = f.events;
  w.record_deliveries = false;
  w.schedule_hints = schedule_hints;
  for (int i = 0; i < processes; ++i) {
    absl::StatusOr<pid_t> pid = testing::SpawnWorker(w, f.out);
    if (pid.ok()) f.pids.push_back(*pid);
  }
  const bool ready = testing::WaitForEvents(
      f.events, absl::Seconds(60), [&](const std::vector<Event>& e) {
        return std::count_if(e.begin(), e.end(), [](const Event& x) {
                 return x.kind == "ready";
               }) == processes;
      });
  Check(ready && static_cast<int>(f.pids.size()) == processes,
        "worker processes did not start: " + f.out);
  return f;
}

// Stops the fleet; returns the sum of its "stopped" and lateness events.
std::vector<Event> StopFleet(const Fleet& f) {
  for (pid_t pid : f.pids) testing::SignalChild(pid, SIGTERM);
  for (pid_t pid : f.pids) {
    Check(testing::WaitChild(pid, absl::Seconds(60)).ok(),
          "a worker did not stop");
  }
  return EventLog::Read(f.events);
}

struct DeliverResult {
  double rate = 0;
  int64_t acknowledged = 0;
  int64_t misses = 0;        // start-window misses, all workers
  double redis_cpu_us = 0;   // Redis's CPU per delivery
  double worker_cpu_us = 0;  // the workers' CPU per delivery
};

// Redis's CPU time so far (INFO cpu), in seconds.
double RedisCpu(RedisServer& redis) {
  auto info = redis.Command({"INFO", "cpu"});
  if (!info.ok()) return 0;
  double total = 0;
  for (const char* key : {"used_cpu_sys:", "used_cpu_user:"}) {
    const size_t at = info->str.find(key);
    if (at != std::string::npos) {
      total += std::strtod(info->str.c_str() + at + std::strlen(key), nullptr);
    }
  }
  return total;
}

// CPU time of this process's reaped children, in seconds.
double ChildrenCpu() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

DeliverResult DeliverRate(RedisServer& redis, int processes, int n,
                          double many_rate, const std::string& dir) {
  const double children_before = ChildrenCpu();
  Fleet fleet =
      SpawnFleet(redis, processes, dir, fmt::format("deliver{}", processes));
  auto timers = DurableTimer::Connect(BenchOptions(redis)).value();
  // All due at one instant, after they are all scheduled.
  const absl::Duration lead =
      absl::Seconds(1) + absl::Seconds(3.0 * n / std::max(many_rate, 1.0));
  const absl::Time due = absl::Now() + lead;
  const std::vector<ScheduleEntry> entries = Entries(n, due, "d");
  bool ok = true;
  for (size_t i = 0; i < entries.size(); i += 1000) {
    const size_t len = std::min<size_t>(1000, entries.size() - i);
    ok = ok && timers->ScheduleMany(std::span(entries).subspan(i, len)).ok();
  }
  Check(ok, "deliver: ScheduleMany() failed");
  // On a loaded machine scheduling may end after the deadline: the clock
  // starts when both have passed.
  const absl::Time start = std::max(due, absl::Now());
  const double redis_before = RedisCpu(redis);
  absl::Time done = absl::InfiniteFuture();
  const absl::Time give_up = start + absl::Seconds(120);
  while (absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
    if (absl::Now() > start && timers->Pending().value_or(-1) == 0) {
      done = absl::Now();
      break;
    }
  }
  DeliverResult r;
  Check(done != absl::InfiniteFuture(), "deliver: timers left pending");
  r.rate = n / std::max(1e-9, absl::ToDoubleSeconds(done - start));
  // Redis's CPU from the moment all were scheduled: delivery, and the
  // Pending() polls (one HLEN per shard every 20 ms, negligible).
  r.redis_cpu_us = (RedisCpu(redis) - redis_before) * 1e6 / n;
  for (const Event& e : StopFleet(fleet)) {
    if (e.kind == "stopped") r.acknowledged += e.b;
    if (e.kind == "misses") r.misses += e.a;
  }
  // The workers' whole lives: start-up and idle polling included.
  r.worker_cpu_us = (ChildrenCpu() - children_before) * 1e6 / n;
  Check(r.acknowledged == n,
        fmt::format("deliver: {} acknowledged of {}", r.acknowledged, n));
  Flush(redis);
  return r;
}

struct Lateness {
  int64_t p50_us = 0, p99_us = 0, max_us = 0, count = 0;
};

// One worker delivers `n` timers that this process schedules: `ahead` well
// before their deadlines (spread over 3 s), or else at short notice (a
// delay of 0-100 ms, one every 3 s / n), with schedule hints on both sides
// or off.
Lateness MeasureLateness(RedisServer& redis, int n, bool ahead, bool hints,
                         const std::string& dir) {
  Fleet fleet = SpawnFleet(
      redis, 1, dir,
      ahead ? "lateness_ahead" : (hints ? "lateness_short" : "lateness_polled"),
      hints);
  DurableTimerOptions options = BenchOptions(redis);
  options.schedule_hints = hints;
  auto timers = DurableTimer::Connect(options).value();
  std::mt19937 rng(42);
  if (ahead) {
    std::vector<ScheduleEntry> entries;
    const absl::Time base = absl::Now() + absl::Seconds(1);
    for (int i = 0; i < n; ++i) {
      entries.push_back({"l" + std::to_string(i),
                         base + absl::Milliseconds(rng() % 3000), ""});
    }
    Check(timers->ScheduleMany(entries).ok(), "lateness: ScheduleMany");
  } else {
    const absl::Duration gap = absl::Seconds(3) / n;
    for (int i = 0; i < n; ++i) {
      Check(timers
                ->ScheduleAfter("l" + std::to_string(i),
                                absl::Milliseconds(rng() % 100))
                .ok(),
            "lateness: ScheduleAfter");
      absl::SleepFor(gap);
    }
  }
  const bool drained = testing::WaitForEvents(
      fleet.events, absl::Seconds(60), [&](const std::vector<Event>&) {
        return timers->Pending().value_or(-1) == 0;
      });
  Check(drained, "lateness: timers left pending");
  Lateness l;
  for (const Event& e : StopFleet(fleet)) {
    if (e.kind == "lateness") {
      l.p50_us = e.a;
      l.p99_us = e.b;
    }
    if (e.kind == "latemax") {
      l.max_us = e.a;
      l.count = e.b;
    }
  }
  Check(l.count == n, fmt::format("lateness: {} delivered of {}", l.count, n));
  Flush(redis);
  return l;
}

std::string RedisVersion(RedisServer& redis) {
  auto info = redis.Command({"INFO", "server"});
  if (!info.ok()) return "?";
  const size_t at = info->str.find("redis_version:");
  if (at == std::string::npos) return "?";
  return info->str.substr(at + 14, info->str.find('\r', at) - at - 14);
}

// One run of the workloads that --only names, in order, on one Redis. Each
// adds its rows to the table and keeps what the goals need; the rates after
// the ceiling are given over it.
class Bench {
 public:
  Bench(const Flags& flags, RedisServer& redis, std::string dir)
      : flags_(flags), redis_(redis), dir_(std::move(dir)) {}

  void RunWorkloads() {
    if (flags_.Runs("ceiling")) RunCeiling();
    if (flags_.Runs("schedule")) RunSchedule();
    if (flags_.Runs("schedule_many")) RunScheduleMany();
    if (flags_.Runs("deliver")) RunDeliver();
    if (flags_.Runs("lateness")) RunLateness();
  }
  void PrintTable() const;
  void PrintGoals() const;

 private:
  void RunCeiling();
  void RunSchedule();
  void RunScheduleMany();
  void RunDeliver();
  void RunLateness();
  // With --stats=1, after each workload: what Redis spent per command.
  void PrintStats(const std::string& workload);

  const Flags& flags_;
  RedisServer& redis_;
  const std::string dir_;  // the worker processes' logs and event files
  double ceiling_ = 0;     // 0: not measured
  double many_ = 0;        // ScheduleMany()'s rate; 0: not measured
  DeliverResult d3_;       // with 3 worker processes
  Lateness ahead_, short_notice_, polled_;
};

void Bench::RunCeiling() {
  ceiling_ = Ceiling(redis_, flags_.ceiling_n, dir_);
  Flush(redis_);
  rows.push_back({"redis-benchmark ZADD, 50 clients, pipeline 16 (ceiling)",
                  ceiling_ > 0 ? Rate(ceiling_) : "n/a (no redis-benchmark)",
                  ceiling_ > 0 ? "1.00x" : "n/a"});
  PrintStats("ceiling");
}

void Bench::RunSchedule() {
  const double single = ScheduleRate(redis_, flags_.schedule_n, 1);
  rows.push_back(
      {"Schedule(), 1 thread", Rate(single), Ratio(single, ceiling_)});
  const double four = ScheduleRate(redis_, flags_.schedule_n, 4);
  rows.push_back({"Schedule(), 4 threads", Rate(four), Ratio(four, ceiling_)});
  PrintStats("schedule");
}

void Bench::RunScheduleMany() {
  many_ = ScheduleManyRate(redis_, flags_.many_n);
  rows.push_back(
      {"ScheduleMany(), batches of 1000", Rate(many_), Ratio(many_, ceiling_)});
  PrintStats("schedule_many");
}

void Bench::RunDeliver() {
  const double lead_rate = many_ > 0 ? many_ : 10000;
  const DeliverResult d1 =
      DeliverRate(redis_, 1, flags_.deliver_n, lead_rate, dir_);
  rows.push_back(
      {"deliveries, 1 process", Rate(d1.rate), Ratio(d1.rate, ceiling_)});
  rows.push_back(
      {"  CPU per delivery: Redis / worker",
       fmt::format("{:.1f} / {:.1f} us", d1.redis_cpu_us, d1.worker_cpu_us),
       ""});
  rows.push_back({"  start-window misses", fmt::format("{}", d1.misses), ""});
  PrintStats("deliver, 1 process");
  d3_ = DeliverRate(redis_, 3, flags_.deliver_n, lead_rate, dir_);
  rows.push_back(
      {"deliveries, 3 processes", Rate(d3_.rate), Ratio(d3_.rate, ceiling_)});
  rows.push_back(
      {"  CPU per delivery: Redis / workers",
       fmt::format("{:.1f} / {:.1f} us", d3_.redis_cpu_us, d3_.worker_cpu_us),
       ""});
  rows.push_back({"  start-window misses", fmt::format("{}", d3_.misses), ""});
  PrintStats("deliver, 3 processes");
}

void Bench::RunLateness() {
  auto ms = [](const Lateness& l) {
    return fmt::format("{:.1f} / {:.1f} / {:.1f} ms", l.p50_us / 1e3,
                       l.p99_us / 1e3, l.max_us / 1e3);
  };
  ahead_ = MeasureLateness(redis_, flags_.lateness_n, true, true, dir_);
  rows.push_back({"lateness p50 / p99 / max, scheduled ahead", ms(ahead_), ""});
  short_notice_ = MeasureLateness(redis_, flags_.lateness_n, false, true, dir_);
  rows.push_back(
      {"lateness p50 / p99 / max, short notice, hints", ms(short_notice_), ""});
  polled_ = MeasureLateness(redis_, flags_.lateness_n, false, false, dir_);
  rows.push_back(
      {"lateness p50 / p99 / max, short notice, hints off", ms(polled_), ""});
  PrintStats("lateness");
}

void Bench::PrintStats(const std::string& workload) {
  if (!flags_.stats) return;
  auto info = redis_.Command({"INFO", "commandstats"});
  if (info.ok()) {
    std::stringstream lines(info->str);
    std::string line;
    fmt::print("[stats {}]\n", workload);
    while (std::getline(lines, line)) {
      if (line.rfind("cmdstat_", 0) == 0) fmt::print("  {}\n", line);
    }
  }
  (void)redis_.Command({"CONFIG", "RESETSTAT"});
}

void Bench::PrintTable() const {
  size_t width = 0;
  for (const Row& r : rows) width = std::max(width, r.metric.size());
  fmt::print("\n{:<{}}  {:>22}  {:>10}\n", "metric", width, "value",
             "/ceiling");
  for (const Row& r : rows) {
    fmt::print("{:<{}}  {:>22}  {:>10}\n", r.metric, width, r.value,
               r.vs_ceiling);
  }
}

void Bench::PrintGoals() const {
  const int64_t poll_us = 200000;
  fmt::print("\nGoals\n");
  auto goal = [](bool met, const std::string& what) {
    fmt::print("  {}  {}\n", met ? "MET   " : "MISSED", what);
  };
  if (flags_.Runs("ceiling") && flags_.Runs("schedule_many")) {
    goal(ceiling_ > 0 && many_ >= ceiling_ / 2,
         "ScheduleMany() within 2x of the ZADD ceiling");
  }
  if (flags_.Runs("deliver")) {
    goal(d3_.rate >= 50000, "deliveries >= 50k/s with 3 processes");
  }
  if (flags_.Runs("lateness")) {
    goal(ahead_.p99_us <= poll_us,
         "lateness p99 <= poll_interval (200 ms), scheduled ahead");
    goal(short_notice_.p99_us < 20000,
         "lateness p99 < 20 ms, short notice (schedule hints)");
    goal(polled_.p99_us <= poll_us,
         "lateness p99 <= poll_interval (200 ms), short notice, hints off");
  }
}

// The correctness checks' verdict: the exit status.
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
  RedisServer::Options ro;
  ro.extra_args = {"--appendfsync", flags.appendfsync};
  absl::StatusOr<std::unique_ptr<RedisServer>> started = RedisServer::Start(ro);
  if (!started.ok()) {
    fmt::print(stderr, "durable_bench: {}\n", started.status().ToString());
    return 1;
  }
  RedisServer& redis = **started;
  const std::string dir = bench::MakeTempDir("tw-durable-bench");
  fmt::print(
      "durable_bench: redis-server {} on 127.0.0.1:{}, appendonly yes, "
      "appendfsync {}, data in {}; {} cores{}\n",
      RedisVersion(redis), redis.port(), flags.appendfsync, redis.dir(),
      std::thread::hardware_concurrency(),
      flags.quick ? "; --quick: sizes too small to measure anything" : "");
  std::fflush(stdout);
  Bench bench(flags, redis, dir);
  bench.RunWorkloads();
  bench.PrintTable();
  bench.PrintGoals();
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
