// tests/durable/durable_get_test.cc
// -----------------------------------------------------------------------------
// Get(id) on a real Redis, in one round trip: a scheduled timer reads back
// with its deadline, payload, attempts 0 and next delivery; one whose
// handler runs is kLeased by this process's owner, attempt 1, with its lease
// end; one whose handler failed is scheduled again at the end of its
// back-off with the failure recorded; an acknowledged, cancelled or unknown
// id is NotFound; a bad id is InvalidArgument; with Redis gone it is
// Unavailable.

#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"

namespace tickwheel::durable {
namespace {

using testing::Latch;
using testing::TestOptions;
using testing::WaitUntil;

class DurableGetTest : public testing::RedisTest {
 protected:
  std::unique_ptr<DurableTimer> Connect(DurableTimerOptions o) {
    absl::StatusOr<std::unique_ptr<DurableTimer>> t =
        DurableTimer::Connect(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }
};

TEST_F(DurableGetTest, AScheduledTimerReadsBackWithItsData) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  const absl::Time deadline = absl::Now() + absl::Hours(2);
  ASSERT_TRUE(timers->Schedule("s", deadline, std::string("p\0q", 3)).ok());
  ASSERT_TRUE(timers->Schedule("m", deadline, "", {.max_attempts = 7}).ok());
  const TimerInfo info = timers->Get("s").value();
  EXPECT_EQ(info.id, "s");
  EXPECT_EQ(info.state, TimerState::kScheduled);
  EXPECT_EQ(info.payload, std::string("p\0q", 3));
  EXPECT_LE(absl::AbsDuration(info.deadline - deadline), absl::Microseconds(1));
  EXPECT_EQ(info.next_delivery, info.deadline);
  EXPECT_EQ(info.attempts, 0);
  EXPECT_EQ(info.max_attempts, 0);
  EXPECT_EQ(info.last_error, "");
  EXPECT_EQ(timers->Get("m").value().max_attempts, 7);
}

TEST_F(DurableGetTest, ARunningTimerIsLeasedByItsOwner) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  Latch running, release;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer&) {
                    running.Notify();
                    release.Wait();
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(timers->ScheduleAfter("r", absl::ZeroDuration(), "x").ok());
  running.Wait();
  const TimerInfo info = timers->Get("r").value();
  EXPECT_EQ(info.state, TimerState::kLeased);
  EXPECT_EQ(info.owner, timers->owner());
  EXPECT_EQ(info.attempts, 1);
  EXPECT_GT(info.lease_end, absl::Now() - absl::Seconds(5));
  release.Notify();
  ASSERT_TRUE(
      WaitUntil([&] { return absl::IsNotFound(timers->Get("r").status()); }));
  ASSERT_TRUE(timers->Stop().ok());
}

TEST_F(DurableGetTest, AFailedTimerIsScheduledAgainWithItsError) {
  DurableTimerOptions o = TestOptions(*redis_);
  o.retry_backoff = absl::Hours(1);
  o.max_retry_backoff = absl::Hours(1);
  auto timers = Connect(o);
  ASSERT_NE(timers, nullptr);
  std::atomic<int> calls{0};
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer&) {
                    ++calls;
                    return absl::FailedPreconditionError("card declined");
                  })
                  .ok());
  ASSERT_TRUE(timers->ScheduleAfter("f", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] {
    absl::StatusOr<TimerInfo> i = timers->Get("f");
    return i.ok() && i->state == TimerState::kScheduled && i->attempts == 1;
  }));
  ASSERT_TRUE(timers->Stop().ok());
  const TimerInfo info = timers->Get("f").value();
  EXPECT_EQ(info.last_error, "FAILED_PRECONDITION: card declined");
  EXPECT_GT(info.next_delivery, absl::Now() + absl::Minutes(30));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(DurableGetTest, GoneOrUnknownIsNotFoundAndBadInputInvalid) {
  auto timers = Connect(TestOptions(*redis_));
  ASSERT_NE(timers, nullptr);
  EXPECT_TRUE(absl::IsNotFound(timers->Get("never").status()));
  ASSERT_TRUE(timers->ScheduleAfter("c", absl::Hours(1)).ok());
  ASSERT_TRUE(timers->Cancel("c").value());
  EXPECT_TRUE(absl::IsNotFound(timers->Get("c").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(timers->Get("").status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(timers->Get(std::string(513, 'x')).status()));
  ASSERT_TRUE(redis_->Stop().ok());
  EXPECT_TRUE(absl::IsUnavailable(timers->Get("c").status()));
}

}  // namespace
}  // namespace tickwheel::durable
