// tests/durable/durable_busy_handler_test.cc
// -----------------------------------------------------------------------------
// A handler that does not return holds its own timer and nothing else. A
// process starts a delivery in Redis only for a handler thread that takes
// it at once; what it claimed beyond that waits unstarted, is not renewed,
// and goes back to the fleet, so a stuck handler cannot hold the due timers
// queued behind it away from idle processes.

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
using testing::Latch;
using testing::TestOptions;
using testing::WaitUntil;

class DurableBusyHandlerTest : public testing::RedisTest {
 protected:
  // Timers held in the leases set of every shard (claimed by someone).
  int64_t Claimed() {
    int64_t n = 0;
    for (int s = 0; s < 4; ++s) {
      n +=
          redis_
              ->Command({"ZCARD", "{tw-test:" + std::to_string(s) + "}:leases"})
              ->AsInt();
    }
    return n;
  }
};

TEST_F(DurableBusyHandlerTest, AStuckHandlerHoldsOnlyItsOwnTimer) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.handler_threads = 1;
  auto busy = DurableTimer::Connect(o).value();
  Latch stuck, unstick;
  Deliveries busy_seen;
  ASSERT_TRUE(busy->Start([&](const FiredTimer& t) {
                    busy_seen.Add(t);
                    if (t.payload == "stuck") {
                      stuck.Notify();
                      unstick.Wait();
                    } else {
                      absl::SleepFor(absl::Milliseconds(20));
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  // A stream the busy process works through, then the stuck one with
  // others due at the same instant, which it claims while it is busy.
  std::vector<ScheduleEntry> entries;
  const absl::Time now = absl::Now();
  for (int i = 0; i < 20; ++i) {
    entries.push_back({"warm" + std::to_string(i), now, ""});
  }
  entries.push_back({"stuck", now + absl::Milliseconds(300), "stuck"});
  for (int i = 0; i < 30; ++i) {
    entries.push_back(
        {"late" + std::to_string(i), now + absl::Milliseconds(300), ""});
  }
  ASSERT_TRUE(busy->ScheduleMany(entries).ok());
  ASSERT_TRUE(stuck.WaitFor());

  // An idle process comes: it gets everything but the stuck one, within
  // a few poll intervals and well within a lease (2 s), which a renewed
  // lease would never end.
  DurableTimerOptions idle_options = TestOptions(*redis_);
  auto idle = DurableTimer::Connect(idle_options).value();
  Deliveries idle_seen;
  ASSERT_TRUE(idle->Start(idle_seen.Recorder()).ok());
  const bool drained = WaitUntil([&] { return idle->Pending().value() == 1; });
  EXPECT_TRUE(drained) << idle->Pending().value() << " pending; the idle "
                       << "process delivered " << idle_seen.Total();
  EXPECT_EQ(Claimed(), 1);  // the stuck one, by the busy process
  EXPECT_EQ(idle_seen.Count("stuck"), 0);
  unstick.Notify();
  ASSERT_TRUE(WaitUntil([&] { return idle->Pending().value() == 0; }));
  ASSERT_TRUE(busy->Stop().ok());
  ASSERT_TRUE(idle->Stop().ok());
  // Each timer once, in one process or the other.
  for (const ScheduleEntry& e : entries) {
    EXPECT_EQ(busy_seen.Count(e.id) + idle_seen.Count(e.id), 1) << e.id;
  }
}

}  // namespace
}  // namespace tickwheel::durable
