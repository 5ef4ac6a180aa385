// tests/durable/durable_lease_test.cc
// -----------------------------------------------------------------------------
// One owner at a time while a lease holds. A handler that outlives the lease
// it started with keeps the timer: its process renews the lease, and no other
// process delivers it. A process that stops renewing (SIGSTOP: paused, as in
// a long GC or a VM migration) loses the timer when the lease ends, another
// process delivers it (attempt 2) and no earlier, and the paused process's
// late acknowledgement is ignored; once resumed it starts no handler for
// the timers it held and lost while paused. Stop() hands claimed-but-unstarted
// timers back at once, so another process delivers them on time rather than
// after the lease.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <mutex>
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

class DurableLeaseTest : public testing::RedisTest {
 protected:
  // The lease end of `id` in Redis, in us; 0 when not claimed.
  int64_t LeaseOf(const std::string& keyspace, int shards,
                  const std::string& id) {
    for (int s = 0; s < shards; ++s) {
      auto r = redis_->Command(
          {"ZSCORE", "{" + keyspace + ":" + std::to_string(s) + "}:leases",
           id});
      if (r.ok() && r->type == internal::RedisReply::Type::kString) {
        return r->AsInt();
      }
    }
    return 0;
  }
};

TEST_F(DurableLeaseTest, AHandlerThatOutlivesItsLeaseKeepsTheTimer) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.lease = absl::Seconds(1);
  auto a = DurableTimer::Connect(o).value();
  auto b = DurableTimer::Connect(o).value();
  Deliveries seen;
  std::atomic<int64_t> first_lease{0}, last_lease{0};
  auto slow = [&](const FiredTimer& t) {
    seen.Add(t);
    // Runs 2.5 leases, watching the lease in Redis move forward.
    for (int i = 0; i < 25; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
      const int64_t lease = LeaseOf("tw-test", 4, t.id);
      if (first_lease == 0) first_lease = lease;
      last_lease = lease;
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(a->Start(slow).ok());
  ASSERT_TRUE(b->Start(slow).ok());
  ASSERT_TRUE(a->ScheduleAfter("slow", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] { return a->Pending().value() == 0; }));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(a->Stop().ok());
  ASSERT_TRUE(b->Stop().ok());
  EXPECT_EQ(seen.Total(), 1u);  // neither process had it twice
  EXPECT_EQ(seen.All()[0].attempt, 1);
  EXPECT_EQ(a->metrics().acknowledged + b->metrics().acknowledged, 1);
  EXPECT_GE(last_lease - first_lease, 1'000'000) << "renewed by >= 1 s";
}

TEST_F(DurableLeaseTest, APausedOwnerLosesTheTimerAndItsLateAckIsIgnored) {
  testing::WorkerConfig w;
  w.redis = redis_->uri();
  w.lease = absl::Seconds(1);
  w.events = testing::TempPath("events");
  w.handler_sleep = absl::Milliseconds(1500);
  const std::string out = testing::TempPath("worker.out");
  absl::StatusOr<pid_t> owner = testing::SpawnWorker(w, out);
  ASSERT_TRUE(owner.ok()) << owner.status();
  auto has = [](std::string_view kind, std::string_view id = "") {
    return [kind, id](const std::vector<Event>& e) {
      for (const Event& x : e) {
        if (x.kind == kind && (id.empty() || x.id == id)) return true;
      }
      return false;
    };
  };
  ASSERT_TRUE(
      testing::WaitForEvents(w.events, testing::kPatience, has("ready")));
  auto other = DurableTimer::Connect(w.Options()).value();
  ASSERT_TRUE(other->ScheduleAfter("x", absl::ZeroDuration()).ok());
  ASSERT_TRUE(
      testing::WaitForEvents(w.events, testing::kPatience, has("start", "x")));
  testing::SignalChild(*owner, SIGSTOP);  // it can neither renew nor finish
  const int64_t owner_started = EventLog::Read(w.events, "start")[0].b;

  Deliveries seen;
  std::atomic<int64_t> other_started{0};
  ASSERT_TRUE(other
                  ->Start([&](const FiredTimer& t) {
                    other_started = RealClock::MonotonicNanos();
                    seen.Add(t);
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return other->Pending().value() == 0; }));
  ASSERT_EQ(seen.Total(), 1u);
  EXPECT_EQ(seen.All()[0].attempt, 2);
  // Not while the owner's lease held: that began at its start (less the
  // few ms between Redis's start and the owner's log line).
  EXPECT_GE(other_started - owner_started, 950'000'000);

  testing::SignalChild(*owner, SIGCONT);
  ASSERT_TRUE(
      testing::WaitForEvents(w.events, testing::kPatience, has("end", "x")));
  absl::SleepFor(absl::Milliseconds(500));  // its acknowledgement goes out
  testing::SignalChild(*owner, SIGTERM);
  ASSERT_TRUE(testing::WaitChild(*owner, testing::kPatience).ok())
      << testing::FileTail(out);
  const std::vector<Event> stopped = EventLog::Read(w.events, "stopped");
  ASSERT_EQ(stopped.size(), 1u) << testing::FileTail(out);
  EXPECT_EQ(stopped[0].a, 1);              // delivered
  EXPECT_EQ(stopped[0].b, 0);              // acknowledged: its ack was ignored
  EXPECT_EQ(other->Pending().value(), 0);  // not resurrected
  ASSERT_TRUE(other->Stop().ok());
  EXPECT_EQ(seen.Total(), 1u);
}

TEST_F(DurableLeaseTest, StopHandsBackWhatItClaimedAheadAtOnce) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.poll_interval = absl::Seconds(1);  // claims up to 1 s ahead
  o.lease = absl::Seconds(30);         // far longer than the test
  o.handler_threads = 16;              // may hold 2 x 16 ahead
  auto first = DurableTimer::Connect(o).value();
  ASSERT_TRUE(first
                  ->Start([](const FiredTimer&) {
                    ADD_FAILURE() << "the first process never runs one";
                    return absl::OkStatus();
                  })
                  .ok());
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 20; ++i) {
    entries.push_back(
        {"h" + std::to_string(i), absl::Now() + absl::Milliseconds(900), ""});
  }
  ASSERT_TRUE(first->ScheduleMany(entries).ok());
  ASSERT_TRUE(WaitUntil([&] {
    int held = 0;
    for (int s = 0; s < 4; ++s) {
      held +=
          redis_
              ->Command({"ZCARD", "{tw-test:" + std::to_string(s) + "}:leases"})
              ->AsInt();
    }
    return held == 20;
  }));
  ASSERT_TRUE(first->Stop().ok());
  EXPECT_EQ(first->metrics().delivered, 0);

  auto second = DurableTimer::Connect(o).value();
  Deliveries seen;
  ASSERT_TRUE(second->Start(seen.Recorder()).ok());
  const absl::Time start = absl::Now();
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 20; }));
  // Within seconds, not after the 30 s lease.
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  for (const FiredTimer& t : seen.All()) EXPECT_EQ(t.attempt, 1) << t.id;
  ASSERT_TRUE(second->Stop().ok());
}

// A process paused (SIGSTOP) past its leases while it held due timers loses
// them to another process; once resumed (SIGCONT) it starts no handler for
// any of them: what it had claimed but not begun is either found gone by
// Redis or past its start window, never run. Only the handler that was
// already running when it was paused finishes.
TEST_F(DurableLeaseTest, AResumedProcessStartsNoTimerItLostWhilePaused) {
  testing::WorkerConfig w;
  w.redis = redis_->uri();
  w.lease = absl::Seconds(1);
  w.handler_threads = 1;
  w.events = testing::TempPath("events");
  w.handler_sleep = absl::Milliseconds(300);
  const std::string out = testing::TempPath("worker.out");
  absl::StatusOr<pid_t> owner = testing::SpawnWorker(w, out);
  ASSERT_TRUE(owner.ok()) << owner.status();
  auto count = [](std::string_view kind) {
    return [kind](const std::vector<Event>& e) {
      return std::count_if(e.begin(), e.end(),
                           [&](const Event& x) { return x.kind == kind; });
    };
  };
  ASSERT_TRUE(testing::WaitForEvents(
      w.events, testing::kPatience,
      [&](const std::vector<Event>& e) { return count("ready")(e) == 1; }));
  auto other = DurableTimer::Connect(w.Options()).value();
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 12; ++i) {
    entries.push_back({"t" + std::to_string(i), absl::Now(), ""});
  }
  ASSERT_TRUE(other->ScheduleMany(entries).ok());
  // Paused while it works through them, one at a time, holding the rest.
  ASSERT_TRUE(testing::WaitForEvents(
      w.events, testing::kPatience,
      [&](const std::vector<Event>& e) { return count("end")(e) >= 2; }));
  absl::SleepFor(absl::Milliseconds(100));
  testing::SignalChild(*owner, SIGSTOP);
  absl::SleepFor(absl::Milliseconds(50));  // stopped on every CPU
  const auto started_before = count("start")(EventLog::Read(w.events));

  Deliveries seen;
  ASSERT_TRUE(other->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return other->Pending().value() == 0; }));
  testing::SignalChild(*owner, SIGCONT);
  // Long enough for its running handler to end and for anything it held
  // to be tried several times over.
  absl::SleepFor(absl::Milliseconds(1500));
  testing::SignalChild(*owner, SIGTERM);
  ASSERT_TRUE(testing::WaitChild(*owner, testing::kPatience).ok())
      << testing::FileTail(out);
  ASSERT_TRUE(other->Stop().ok());
  const std::vector<Event> events = EventLog::Read(w.events);
  EXPECT_EQ(count("start")(events), started_before)
      << "handlers started after SIGCONT: " << testing::FileTail(w.events);
  EXPECT_EQ(other->Pending().value(), 0);
}

}  // namespace
}  // namespace tickwheel::durable
