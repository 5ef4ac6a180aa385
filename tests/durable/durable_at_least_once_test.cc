// tests/durable/durable_at_least_once_test.cc
// -----------------------------------------------------------------------------
// At least once: every timer whose Schedule() returned OK is delivered until
// a handler returns OK for it. A handler that fails or throws gets the timer
// again after an exponential back-off (attempt + 1), and the delivery
// threads survive the throw. A worker process killed with SIGKILL inside its
// handler loses nothing: what it held is delivered again, elsewhere, once
// its lease ends; killing one of two workers in the middle of a stream of
// timers leaves none undelivered.

#include <signal.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/child_process.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"
#include "tickwheel/durable/testing/worker_role.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::Event;
using testing::EventLog;
using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;
using testing::WorkerConfig;

using DurableAtLeastOnceTest = testing::RedisTest;

// The handler's answer by id: "fail*" fails its first attempt, "throw*"
// throws in it, "thrice" fails its first three; the rest succeed.
absl::Status FailAsScripted(const FiredTimer& t) {
  if (t.id.starts_with("fail") && t.attempt == 1) {
    return absl::UnavailableError("downstream is down");
  }
  if (t.id.starts_with("throw") && t.attempt == 1) {
    throw std::runtime_error("handler bug");
  }
  if (t.id == "thrice" && t.attempt <= 3) {
    return absl::InternalError("not yet");
  }
  return absl::OkStatus();
}

// How many of `events` are of `kind`.
int Count(const std::vector<Event>& events, const std::string& kind) {
  return static_cast<int>(
      std::count_if(events.begin(), events.end(),
                    [&](const Event& e) { return e.kind == kind; }));
}

TEST_F(DurableAtLeastOnceTest, FailingAndThrowingHandlersGetItAgainLater) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.retry_backoff = absl::Milliseconds(100);
  o.max_retry_backoff = absl::Milliseconds(250);
  auto timers = DurableTimer::Connect(o).value();
  std::mutex mu;
  // id -> (attempt, local start ns) of each run
  std::map<std::string, std::vector<std::pair<int, int64_t>>> runs;
  ASSERT_TRUE(
      timers
          ->Start([&](const FiredTimer& t) {
            {
              std::lock_guard<std::mutex> lock(mu);
              runs[t.id].push_back({t.attempt, RealClock::MonotonicNanos()});
            }
            return FailAsScripted(t);
          })
          .ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        timers->ScheduleAfter("fail" + std::to_string(i), absl::ZeroDuration())
            .ok());
    ASSERT_TRUE(
        timers->ScheduleAfter("throw" + std::to_string(i), absl::ZeroDuration())
            .ok());
  }
  ASSERT_TRUE(timers->ScheduleAfter("thrice", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());

  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [id, r] : runs) {
    const size_t expected = id == "thrice" ? 4 : 2;
    ASSERT_EQ(r.size(), expected) << id;
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(r[i].first, static_cast<int>(i) + 1) << id;
    }
  }
  // The back-off, on Redis's clock from the failure: 100, 200, then capped
  // at 250 ms. Local gaps between starts are at least that (less a little
  // for the two clocks' reading granularity).
  const auto& thrice = runs["thrice"];
  const int64_t ms = 1'000'000;
  EXPECT_GE(thrice[1].second - thrice[0].second, 99 * ms);
  EXPECT_GE(thrice[2].second - thrice[1].second, 199 * ms);
  EXPECT_GE(thrice[3].second - thrice[2].second, 249 * ms);
  const DurableMetrics m = timers->metrics();
  EXPECT_EQ(m.delivered, 44);
  EXPECT_EQ(m.acknowledged, 21);
  EXPECT_EQ(m.handler_failures, 23);
  EXPECT_EQ(m.redelivered, 23);
}

TEST_F(DurableAtLeastOnceTest, AWorkerKilledInItsHandlerLosesNothing) {
  WorkerConfig w;
  w.redis = redis_->uri();
  w.lease = absl::Seconds(1);
  w.events = testing::TempPath("events");
  w.handler_sleep = absl::Seconds(60);  // killed long before it returns
  w.handler_threads = 2;
  const std::string out = testing::TempPath("worker.out");
  absl::StatusOr<pid_t> victim = testing::SpawnWorker(w, out);
  ASSERT_TRUE(victim.ok()) << victim.status();
  ASSERT_TRUE(testing::WaitForEvents(
      w.events, testing::kPatience,
      [](const std::vector<Event>& e) { return Count(e, "ready") > 0; }));
  auto timers = DurableTimer::Connect(w.Options()).value();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        timers->ScheduleAfter("k" + std::to_string(i), absl::ZeroDuration())
            .ok());
  }
  // Two are inside the victim's handlers (two threads); it may hold more.
  ASSERT_TRUE(testing::WaitForEvents(
      w.events, testing::kPatience,
      [](const std::vector<Event>& e) { return Count(e, "start") == 2; }));
  testing::SignalChild(*victim, SIGKILL);
  ASSERT_TRUE(testing::WaitChild(*victim, testing::kPatience).ok());
  const int64_t killed_at = RealClock::MonotonicNanos();
  std::set<std::string> in_victim;
  for (const Event& e : EventLog::Read(w.events, "start")) {
    in_victim.insert(e.id);
  }

  Deliveries seen;
  std::mutex mu;
  std::map<std::string, int64_t> started_at;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    std::lock_guard<std::mutex> lock(mu);
                    started_at[t.id] = RealClock::MonotonicNanos();
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 5; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  for (const FiredTimer& t : seen.All()) {
    if (in_victim.count(t.id) != 0) {
      EXPECT_EQ(t.attempt, 2) << t.id << " was started by the victim";
    }
  }
  // What the victim held came back only once its lease (1 s from its last
  // renewal) had ended: not before the kill plus the lease, less the time
  // since its last renewal (at most half a lease).
  for (const std::string& id : in_victim) {
    EXPECT_GE(started_at[id] - killed_at, 400'000'000) << id;
  }
}

TEST_F(DurableAtLeastOnceTest, KillingOneOfTwoWorkersMidStreamLosesNothing) {
  WorkerConfig w;
  w.redis = redis_->uri();
  w.lease = absl::Seconds(1);
  w.handler_sleep = absl::Milliseconds(10);
  w.handler_threads = 2;
  w.max_in_flight = 16;
  std::vector<pid_t> pids;
  std::vector<std::string> logs, outs;
  for (int i = 0; i < 2; ++i) {
    w.events = testing::TempPath("events");
    logs.push_back(w.events);
    outs.push_back(testing::TempPath("worker.out"));
    auto pid = testing::SpawnWorker(w, outs.back());
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids.push_back(*pid);
    ASSERT_TRUE(testing::WaitForEvents(
        w.events, testing::kPatience, [](const std::vector<Event>& e) {
          return !e.empty() && e.back().kind == "ready";
        }));
  }
  auto timers = DurableTimer::Connect(w.Options()).value();
  std::vector<ScheduleEntry> entries;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    entries.push_back(
        {"s" + std::to_string(i), absl::Now() + absl::Milliseconds(5 * i), ""});
  }
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  // Kill the first worker once it is busy.
  ASSERT_TRUE(testing::WaitForEvents(
      logs[0], testing::kPatience,
      [](const std::vector<Event>& e) { return e.size() > 20; }));
  testing::SignalChild(pids[0], SIGKILL);
  ASSERT_TRUE(testing::WaitChild(pids[0], testing::kPatience).ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  testing::SignalChild(pids[1], SIGTERM);
  ASSERT_TRUE(testing::WaitChild(pids[1], testing::kPatience).ok())
      << testing::FileTail(outs[1]);
  std::set<std::string> acknowledged;
  for (const std::string& log : logs) {
    for (const Event& e : EventLog::Read(log, "end")) {
      if (e.b == 1) acknowledged.insert(e.id);
    }
  }
  // Every timer had a handler return OK for it; Pending() == 0 says Redis
  // took each acknowledgement.
  EXPECT_EQ(acknowledged.size(), static_cast<size_t>(n));
}

}  // namespace
}  // namespace tickwheel::durable
