// tests/durable/durable_cancel_test.cc
// -----------------------------------------------------------------------------
// Cancel(): true iff the timer was scheduled and not yet acknowledged; then
// it is never delivered again -- also when a process (this one or another)
// has already claimed it ahead of its deadline and holds it in its local
// Timer. A delivery already running finishes, and its acknowledgement is
// ignored. Replacing a timer that is running works the same way. A copy
// that a busy process claimed but has not begun is not running: a Cancel()
// or a replacement that returned wins over it.

#include <atomic>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::RedisServer;
using testing::TestOptions;
using testing::WaitUntil;

// 20 timers due now, which a process with one handler thread works
// through, then "block" and `victims` others ("victim<i>", payload "old")
// due at one instant a little later, which it claims while it is busy.
std::vector<ScheduleEntry> BusyThenBlocked(int victims) {
  std::vector<ScheduleEntry> entries;
  const absl::Time now = absl::Now();
  for (int i = 0; i < 20; ++i) {
    entries.push_back({"warm" + std::to_string(i), now, ""});
  }
  const absl::Time later = now + absl::Milliseconds(300);
  entries.push_back({"block", later, "block"});
  for (int i = 0; i < victims; ++i) {
    entries.push_back({"victim" + std::to_string(i), later, "old"});
  }
  return entries;
}

class DurableCancelTest : public testing::RedisTest {
 protected:
  // Timers held in the leases set of every shard (claimed by someone).
  int64_t Claimed(const std::string& keyspace) {
    int64_t n = 0;
    for (int s = 0; s < 4; ++s) {
      n += redis_
               ->Command({"ZCARD", "{" + keyspace + ":" + std::to_string(s) +
                                       "}:leases"})
               ->AsInt();
    }
    return n;
  }
};

TEST_F(DurableCancelTest, TrueOnceForAScheduledTimerFalseOtherwise) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_)).value();
  EXPECT_FALSE(timers->Cancel("never-scheduled").value());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::Hours(1)).ok());
  EXPECT_TRUE(timers->Cancel("x").value());
  EXPECT_FALSE(timers->Cancel("x").value());
  EXPECT_EQ(timers->Pending().value(), 0);

  // Acknowledged: unknown.
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(timers->ScheduleAfter("y", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  EXPECT_FALSE(timers->Cancel("y").value());
  EXPECT_EQ(seen.Total(), 1u);
}

// A timer claimed ahead of its deadline (a poll interval ahead) and held in
// a local Timer: a Cancel() from this process or from another one wins,
// because the holder asks Redis before it starts the handler.
TEST_F(DurableCancelTest, ATimerHeldAheadOfItsDeadlineIsNeverDelivered) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.poll_interval = absl::Seconds(2);  // claims up to 2 s ahead
  o.lease = absl::Seconds(8);
  o.handler_threads = 8;
  auto holder = DurableTimer::Connect(o).value();
  auto other = DurableTimer::Connect(o).value();  // "another process"
  ASSERT_TRUE(holder->ScheduleAfter("mine", absl::Milliseconds(1200)).ok());
  ASSERT_TRUE(other->ScheduleAfter("theirs", absl::Milliseconds(1200)).ok());
  Deliveries seen;
  ASSERT_TRUE(holder->Start(seen.Recorder()).ok());
  // Both claimed by the holder's first poll, well before they are due.
  ASSERT_TRUE(WaitUntil([&] { return Claimed("tw-test") == 2; }));
  EXPECT_TRUE(holder->Cancel("mine").value());
  EXPECT_TRUE(other->Cancel("theirs").value());
  ASSERT_TRUE(holder->ScheduleAfter("control", absl::Milliseconds(1000)).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("control") == 1; }));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(holder->Stop().ok());
  EXPECT_EQ(seen.Count("mine"), 0);
  EXPECT_EQ(seen.Count("theirs"), 0);
  EXPECT_EQ(holder->Pending().value(), 0);
}

TEST_F(DurableCancelTest, ARunningDeliveryFinishesAndItsAckIsIgnored) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_)).value();
  testing::Latch started, release;
  std::atomic<int> runs{0};
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer&) {
                    ++runs;
                    started.Notify();
                    release.Wait();
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::ZeroDuration()).ok());
  ASSERT_TRUE(started.WaitFor());
  EXPECT_TRUE(timers->Cancel("x").value());  // scheduled, not acknowledged
  EXPECT_EQ(timers->Pending().value(), 0);
  release.Notify();
  ASSERT_TRUE(WaitUntil([&] {
    return timers->metrics().delivered == 1 && timers->Pending().value() == 0;
  }));
  absl::SleepFor(absl::Milliseconds(300));  // nothing comes back
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(timers->metrics().acknowledged, 0);  // the late ack: ignored
  EXPECT_FALSE(timers->Cancel("x").value());
}

TEST_F(DurableCancelTest, ReplacingARunningTimerDeliversTheNewOneOnce) {
  auto timers = DurableTimer::Connect(TestOptions(*redis_)).value();
  testing::Latch started, release;
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    if (t.payload == "v1") {
                      started.Notify();
                      release.Wait();
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::ZeroDuration(), "v1").ok());
  ASSERT_TRUE(started.WaitFor());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::Milliseconds(100), "v2").ok());
  release.Notify();
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 2; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(timers->Stop().ok());
  ASSERT_EQ(seen.Total(), 2u);
  EXPECT_EQ(seen.All()[1].payload, "v2");
  EXPECT_EQ(seen.All()[1].attempt, 1);  // a replacement starts over
  EXPECT_EQ(timers->metrics().acknowledged, 1);
}

// A process whose only handler thread is busy holds due timers it claimed:
// they wait unstarted (Redis starts a delivery only for a free handler
// thread), so a Cancel() from another process that returns true wins over
// them, and none of them runs once the handler is free.
TEST_F(DurableCancelTest, ATimerQueuedBehindABusyHandlerIsNeverDelivered) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.handler_threads = 1;
  auto holder = DurableTimer::Connect(o).value();
  auto other = DurableTimer::Connect(o).value();  // "another process"
  testing::Latch blocked, release;
  Deliveries seen;
  ASSERT_TRUE(holder
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    if (t.payload == "block") {
                      blocked.Notify();
                      release.Wait();
                    } else {
                      absl::SleepFor(absl::Milliseconds(20));
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(holder->ScheduleMany(BusyThenBlocked(30)).ok());
  ASSERT_TRUE(blocked.WaitFor());
  // Its one thread is blocked: whatever it holds now has not started.
  std::vector<std::string> cancelled;
  for (int i = 0; i < 30; ++i) {
    const std::string id = "victim" + std::to_string(i);
    if (other->Cancel(id).value()) cancelled.push_back(id);
  }
  EXPECT_FALSE(cancelled.empty());
  release.Notify();
  ASSERT_TRUE(WaitUntil([&] { return holder->Pending().value() == 0; }));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(holder->Stop().ok());
  for (const std::string& id : cancelled) {
    EXPECT_EQ(seen.Count(id), 0) << id << " ran after Cancel() returned true";
  }
}

// The same with a replacement: once Schedule(id, later, "new") returned OK,
// the old copy a busy process holds never runs (it would carry the old
// payload, early for the new deadline); the new one runs once.
TEST_F(DurableCancelTest, AReplacedTimerQueuedBehindABusyHandlerRunsAsNewOnly) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.handler_threads = 1;
  auto holder = DurableTimer::Connect(o).value();
  auto other = DurableTimer::Connect(o).value();
  testing::Latch blocked, release;
  Deliveries seen;
  std::atomic<int> early{0};
  ASSERT_TRUE(holder
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    if (absl::Now() < t.deadline) ++early;
                    if (t.payload == "block") {
                      blocked.Notify();
                      release.Wait();
                    } else if (t.payload != "new") {
                      absl::SleepFor(absl::Milliseconds(20));
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(holder->ScheduleMany(BusyThenBlocked(30)).ok());
  ASSERT_TRUE(blocked.WaitFor());
  const size_t before = seen.Total();
  const absl::Time later = absl::Now() + absl::Milliseconds(500);
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(
        other->Schedule("victim" + std::to_string(i), later, "new").ok());
  }
  release.Notify();
  ASSERT_TRUE(WaitUntil([&] { return holder->Pending().value() == 0; }));
  ASSERT_TRUE(holder->Stop().ok());
  const std::vector<FiredTimer> all = seen.All();
  for (size_t i = before; i < all.size(); ++i) {
    EXPECT_NE(all[i].payload, "old")
        << all[i].id << ": the old copy ran after it was replaced";
  }
  for (int i = 0; i < 30; ++i) {
    int fresh = 0;
    for (const FiredTimer& t : all) {
      fresh += t.id == "victim" + std::to_string(i) && t.payload == "new";
    }
    EXPECT_EQ(fresh, 1) << "victim" << i;
  }
  EXPECT_EQ(early.load(), 0);
}

}  // namespace
}  // namespace tickwheel::durable
