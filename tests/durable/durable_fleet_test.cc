// tests/durable/durable_fleet_test.cc
// -----------------------------------------------------------------------------
// A fleet of three worker processes on one keyspace: the load is shared (each
// delivers some), each timer is delivered once when nothing fails, and no
// two processes ever run the same timer at the same time.

#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/child_process.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/test_util.h"
#include "tickwheel/durable/testing/worker_role.h"

namespace tickwheel::durable {
namespace {

using testing::Event;
using testing::EventLog;
using testing::RedisServer;
using testing::WorkerConfig;

// The fleet's event log by timer and by process. Points into the log.
struct Tally {
  std::map<std::string, std::vector<const Event*>> starts, ends;  // by id
  std::map<int, int> per_process;  // pid -> handler runs started
  int stopped = 0;                 // processes that stopped cleanly
};

Tally TallyOf(const std::vector<Event>& events) {
  Tally t;
  for (const Event& e : events) {
    if (e.kind == "start") {
      t.starts[e.id].push_back(&e);
      ++t.per_process[e.pid];
    }
    if (e.kind == "end") t.ends[e.id].push_back(&e);
    t.stopped += e.kind == "stopped";
  }
  return t;
}

TEST(DurableFleetTest, ThreeProcessesShareTheTimersAndRunEachOnce) {
  auto redis = RedisServer::Start().value();
  WorkerConfig w;
  w.redis = redis->uri();
  w.shards = 8;
  w.handler_sleep = absl::Milliseconds(10);
  w.handler_threads = 2;
  w.max_in_flight = 8;                     // no process can take everything
  w.events = testing::TempPath("events");  // one log for the fleet
  std::vector<pid_t> pids;
  const std::string out = testing::TempPath("fleet.out");  // all three
  for (int i = 0; i < 3; ++i) {
    auto pid = testing::SpawnWorker(w, out);
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids.push_back(*pid);
  }
  ASSERT_TRUE(testing::WaitForEvents(
      w.events, testing::kPatience, [](const std::vector<Event>& e) {
        return std::count_if(e.begin(), e.end(), [](const Event& x) {
                 return x.kind == "ready";
               }) == 3;
      }));

  auto timers = DurableTimer::Connect(w.Options()).value();
  const int n = 240;
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < n; ++i) {
    entries.push_back(
        {"f" + std::to_string(i), absl::Now() + absl::Milliseconds(2 * i), ""});
  }
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  ASSERT_TRUE(
      testing::WaitUntil([&] { return timers->Pending().value() == 0; }));
  for (pid_t pid : pids) testing::SignalChild(pid, SIGTERM);
  for (pid_t pid : pids) {
    ASSERT_TRUE(testing::WaitChild(pid, testing::kPatience).ok())
        << testing::FileTail(out);
  }

  const std::vector<Event> events = EventLog::Read(w.events);
  Tally t = TallyOf(events);
  EXPECT_EQ(t.starts.size(), static_cast<size_t>(n));
  for (const auto& [id, s] : t.starts) {
    EXPECT_EQ(s.size(), 1u) << id << " ran more than once";
    EXPECT_EQ(s[0]->a, 1) << id;  // attempt
    ASSERT_EQ(t.ends[id].size(), s.size()) << id;
    EXPECT_EQ(t.ends[id][0]->pid, s[0]->pid) << id;
  }
  EXPECT_EQ(t.per_process.size(), 3u) << "every process delivered some";
  for (const auto& [pid, count] : t.per_process) {
    EXPECT_GT(count, 0) << pid;
  }
  EXPECT_EQ(t.stopped, 3) << testing::FileTail(out);
}

}  // namespace
}  // namespace tickwheel::durable
