// tests/durable/durable_schedule_test.cc
// -----------------------------------------------------------------------------
// Schedule(), ScheduleAfter() and ScheduleMany() on a real Redis: what is
// scheduled is delivered with its payload, deadline and attempt 1, once; the
// same id again replaces deadline and payload; ScheduleMany() spans shards
// and applies all entries in one transaction; Pending() counts every timer
// not yet acknowledged or cancelled, keyspace-wide; the metrics count it all.

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

class DurableScheduleTest : public testing::RedisTest {
 protected:
  std::unique_ptr<DurableTimer> Connect(DurableTimerOptions o) {
    absl::StatusOr<std::unique_ptr<DurableTimer>> t =
        DurableTimer::Connect(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }
};

TEST_F(DurableScheduleTest, ScheduledTimersAreDeliveredOnceWithTheirData) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  const absl::Time deadline = absl::Now() + absl::Milliseconds(200);
  ASSERT_TRUE(timers->Schedule("a", deadline, "payload-a").ok());
  ASSERT_TRUE(timers->ScheduleAfter("b", absl::Milliseconds(100), "b").ok());
  ASSERT_TRUE(timers->Schedule("c", absl::InfinitePast()).ok());  // due now
  EXPECT_EQ(timers->Pending().value(), 3);

  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 3; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  for (const FiredTimer& t : seen.All()) {
    EXPECT_EQ(t.attempt, 1) << t.id;
    if (t.id == "a") {
      EXPECT_EQ(t.payload, "payload-a");
      EXPECT_LE(absl::AbsDuration(t.deadline - deadline),
                absl::Microseconds(1));
    }
    if (t.id == "b") {
      EXPECT_EQ(t.payload, "b");
    }
    if (t.id == "c") {
      EXPECT_EQ(t.payload, "");
    }
  }
  const DurableMetrics m = timers->metrics();
  EXPECT_EQ(m.scheduled, 3);
  EXPECT_EQ(m.delivered, 3);
  EXPECT_EQ(m.acknowledged, 3);
  EXPECT_EQ(m.redelivered, 0);
  EXPECT_EQ(m.handler_failures, 0);
  EXPECT_EQ(m.lateness.count(), 3);
}

TEST_F(DurableScheduleTest, TheSameIdAgainReplacesDeadlineAndPayload) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::Hours(1), "old").ok());
  ASSERT_TRUE(timers->ScheduleAfter("x", absl::Milliseconds(50), "new").ok());
  EXPECT_EQ(timers->Pending().value(), 1);
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  absl::SleepFor(absl::Milliseconds(300));  // no second delivery comes
  ASSERT_TRUE(timers->Stop().ok());
  ASSERT_EQ(seen.Total(), 1u);
  EXPECT_EQ(seen.All()[0].payload, "new");
}

TEST_F(DurableScheduleTest, ScheduleManySpansShardsAndAppliesAll) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  std::vector<ScheduleEntry> entries;
  const absl::Time now = absl::Now();
  for (int i = 0; i < 300; ++i) {
    entries.push_back({"many-" + std::to_string(i),
                       now + absl::Milliseconds(i % 50),
                       std::string(static_cast<size_t>(i % 7), 'p')});
  }
  entries.push_back({"many-0", now, "last wins"});  // a duplicate id
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  EXPECT_EQ(timers->Pending().value(), 300);
  // Every shard got some.
  for (int s = 0; s < 4; ++s) {
    auto n =
        redis_->Command({"HLEN", "{tw-test:" + std::to_string(s) + "}:state"});
    ASSERT_TRUE(n.ok());
    EXPECT_GT(n->AsInt(), 0) << "shard " << s;
  }
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Distinct() == 300; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.Total(), 300u);
  for (const FiredTimer& t : seen.All()) {
    if (t.id == "many-0") {
      EXPECT_EQ(t.payload, "last wins");
    }
  }
  EXPECT_EQ(timers->metrics().scheduled, 301);
  EXPECT_TRUE(timers->ScheduleMany({}).ok());  // nothing: no round trip
}

TEST_F(DurableScheduleTest, PendingIsKeyspaceWideAndKeyspacesAreApart) {
  auto a = Connect(TestOptions(*redis_, "space-a"));
  auto a2 = Connect(TestOptions(*redis_, "space-a"));
  auto b = Connect(TestOptions(*redis_, "space-b"));
  ASSERT_TRUE(a && a2 && b);
  ASSERT_TRUE(a->ScheduleAfter("t1", absl::Hours(1)).ok());
  ASSERT_TRUE(a2->ScheduleAfter("t2", absl::Hours(1)).ok());
  ASSERT_TRUE(b->ScheduleAfter("t1", absl::Hours(1)).ok());
  EXPECT_EQ(a->Pending().value(), 2);
  EXPECT_EQ(a2->Pending().value(), 2);
  EXPECT_EQ(b->Pending().value(), 1);
  EXPECT_TRUE(b->Cancel("t1").value());
  EXPECT_EQ(a->Pending().value(), 2);
  EXPECT_EQ(b->Pending().value(), 0);
}

TEST_F(DurableScheduleTest, BinaryIdsAndPayloadsRoundTrip) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  static constexpr char kId[] = "id\0with:nul {braces} \xff";
  static constexpr char kPayload[] = "\0\1\2 payload \r\n\xfe";
  const std::string id(kId, sizeof(kId) - 1);
  const std::string payload(kPayload, sizeof(kPayload) - 1);
  ASSERT_TRUE(timers->ScheduleAfter(id, absl::ZeroDuration(), payload).ok());
  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 1; }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.All()[0].id, id);
  EXPECT_EQ(seen.All()[0].payload, payload);
}

}  // namespace
}  // namespace tickwheel::durable
