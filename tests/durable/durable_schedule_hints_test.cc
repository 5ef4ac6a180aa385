// tests/durable/durable_schedule_hints_test.cc
// -----------------------------------------------------------------------------
// Schedule hints (DurableTimerOptions::schedule_hints) on a real Redis: the
// schedule script announces a timer due within the poll interval, and only
// such a timer; a delivering process that polls rarely (10 s) gets a timer
// that another DurableTimer (its own connections, as another process would
// have) schedules 100 ms ahead long before its next poll; after Redis kills
// the listener's connection (CLIENT KILL TYPE pubsub) it subscribes again,
// hints work again, and what was scheduled meanwhile is delivered too; with
// hints off, or for an ACL user without the channel, there is no listener
// and polling still delivers.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/hint_listener.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/redis_test.h"
#include "tickwheel/durable/testing/test_util.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable {
namespace {

using internal::HintChannel;
using internal::ParseHint;
using internal::RedisConnection;
using internal::RedisReply;
using testing::Deliveries;
using testing::TestOptions;
using testing::WaitUntil;

constexpr char kKeyspace[] = "tw-hints";
// Far longer than any bound asserted below: only a hint (or the rescan
// after a subscription) gets a timer delivered before the next poll.
constexpr absl::Duration kLongPoll = absl::Seconds(10);
// A bound on delivery well under kLongPoll, yet generous for a loaded
// machine: a hinted timer is due in 100 ms and normally starts a few
// milliseconds after that.
constexpr absl::Duration kLongBeforeThePoll = absl::Seconds(5);

TEST(ScheduleHintTest, ParsesShardAndDeadline) {
  EXPECT_EQ(ParseHint("3 1700000000123456", 16)->shard, 3);
  EXPECT_EQ(ParseHint("3 1700000000123456", 16)->due_us, 1700000000123456);
  EXPECT_EQ(ParseHint("0 0", 1)->shard, 0);
  for (const char* bad :
       {"", "3", "3 ", " 5", "16 5", "-1 5", "3 -5", "3 5x", "x 5", "3  5"}) {
    EXPECT_FALSE(ParseHint(bad, 16).has_value()) << '"' << bad << '"';
  }
}

class DurableScheduleHintsTest : public testing::RedisTest {
 protected:
  DurableTimerOptions Options(bool hints) {
    DurableTimerOptions o = TestOptions(*redis_, kKeyspace);
    o.poll_interval = kLongPoll;
    o.lease = absl::Seconds(20);
    o.schedule_hints = hints;
    return o;
  }
  std::unique_ptr<DurableTimer> Connect(DurableTimerOptions o) {
    absl::StatusOr<std::unique_ptr<DurableTimer>> t =
        DurableTimer::Connect(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }
  // Subscribers of the keyspace's hint channel (PUBSUB NUMSUB).
  int64_t Listeners() {
    auto r = redis_->Command({"PUBSUB", "NUMSUB", HintChannel(kKeyspace)});
    if (!r.ok() || r->elements.size() != 2) return -1;
    return r->elements[1].AsInt();
  }
  // Starts `deliverer` and waits until its listener is subscribed and its
  // first look at every shard is done (the next one is kLongPoll later).
  void StartDeliverer(DurableTimer& deliverer, Deliveries& seen) {
    ASSERT_TRUE(deliverer.Start(seen.Recorder()).ok());
    ASSERT_TRUE(WaitUntil([&] { return Listeners() == 1; }));
    absl::SleepFor(absl::Milliseconds(500));
  }
  // Whether `id` is delivered within `bound` of now.
  static bool DeliveredWithin(const Deliveries& seen, const std::string& id,
                              absl::Duration bound) {
    return WaitUntil([&] { return seen.Count(id) > 0; }, bound);
  }
};

TEST_F(DurableScheduleHintsTest, ScheduleAnnouncesOnlyTimersDueWithinThePoll) {
  auto scheduler = Connect(Options(true));
  ASSERT_NE(scheduler, nullptr);
  internal::RedisEndpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = redis_->port();
  absl::StatusOr<std::unique_ptr<RedisConnection>> sub = RedisConnection::Open(
      endpoint, "", "", RealClock::MonotonicNanos() + 5'000'000'000);
  ASSERT_TRUE(sub.ok()) << sub.status();
  const internal::RedisCommand subscribe = {"SUBSCRIBE",
                                            HintChannel(kKeyspace)};
  std::vector<RedisReply> replies;
  ASSERT_TRUE((*sub)
                  ->Pipeline({&subscribe, 1}, &replies,
                             RealClock::MonotonicNanos() + 5'000'000'000)
                  .ok());
  auto next_message = [&]() -> std::optional<std::string> {
    auto got = (*sub)->Receive(RealClock::MonotonicNanos() + 2'000'000'000, -1);
    if (!got.ok() || !got->has_value() || (**got).elements.size() != 3) {
      return std::nullopt;
    }
    return (**got).elements[2].str;
  };
  // Due in an hour: no hint. Then due at a known deadline within the poll
  // interval: "<shard> <deadline us>", the first message on the channel.
  ASSERT_TRUE(scheduler->ScheduleAfter("later", absl::Hours(1)).ok());
  const absl::Time deadline = absl::FromUnixMicros(
      redis_->TimeMicros().value() + absl::ToInt64Microseconds(kLongPoll / 2));
  ASSERT_TRUE(scheduler->Schedule("soon", deadline).ok());
  const std::optional<std::string> message = next_message();
  ASSERT_TRUE(message.has_value());
  const std::optional<internal::Hint> hint = ParseHint(*message, 4);
  ASSERT_TRUE(hint.has_value()) << *message;
  EXPECT_EQ(hint->shard, internal::ShardOf("soon", 4));
  EXPECT_EQ(hint->due_us, absl::ToUnixMicros(deadline));
  // Hints off: nothing.
  auto quiet = Connect(Options(false));
  ASSERT_NE(quiet, nullptr);
  ASSERT_TRUE(quiet->ScheduleAfter("quiet", absl::Milliseconds(1)).ok());
  EXPECT_FALSE(next_message().has_value());
}

TEST_F(DurableScheduleHintsTest, ATimerAnotherProcessSchedulesSoonIsPrompt) {
  // Two DurableTimers with connections of their own: to Redis, two
  // processes. One delivers and polls every 10 s; the other schedules.
  auto deliverer = Connect(Options(true));
  auto scheduler = Connect(Options(true));
  ASSERT_NE(deliverer, nullptr);
  ASSERT_NE(scheduler, nullptr);
  Deliveries seen;
  StartDeliverer(*deliverer, seen);
  for (const std::string id : {"first", "second"}) {
    ASSERT_TRUE(scheduler->ScheduleAfter(id, absl::Milliseconds(100)).ok());
    EXPECT_TRUE(DeliveredWithin(seen, id, kLongBeforeThePoll)) << id;
  }
  ASSERT_TRUE(
      WaitUntil([&] { return scheduler->Pending().value_or(-1) == 0; }));
  ASSERT_TRUE(deliverer->Stop().ok());
  EXPECT_EQ(seen.Total(), 2u);
}

TEST_F(DurableScheduleHintsTest, TheListenerSubscribesAgainAfterAKill) {
  auto deliverer = Connect(Options(true));
  auto scheduler = Connect(Options(true));
  ASSERT_NE(deliverer, nullptr);
  ASSERT_NE(scheduler, nullptr);
  Deliveries seen;
  StartDeliverer(*deliverer, seen);
  auto killed = redis_->Command({"CLIENT", "KILL", "TYPE", "pubsub"});
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_EQ(killed->AsInt(), 1);
  // Scheduled while the listener is away (or just back): its hint may be
  // lost, and the look at every shard after the new subscription finds it.
  ASSERT_TRUE(
      scheduler->ScheduleAfter("meanwhile", absl::Milliseconds(100)).ok());
  // Subscribed again, and its look at every shard done: "after" can only
  // be found through its hint before the next poll.
  ASSERT_TRUE(WaitUntil([&] { return Listeners() == 1; }));
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_TRUE(scheduler->ScheduleAfter("after", absl::Milliseconds(100)).ok());
  EXPECT_TRUE(DeliveredWithin(seen, "after", kLongBeforeThePoll));
  EXPECT_TRUE(DeliveredWithin(seen, "meanwhile", kLongBeforeThePoll));
  ASSERT_TRUE(
      WaitUntil([&] { return scheduler->Pending().value_or(-1) == 0; }));
  ASSERT_TRUE(deliverer->Stop().ok());
  EXPECT_EQ(seen.Count("meanwhile"), 1);
  EXPECT_EQ(seen.Count("after"), 1);
  EXPECT_EQ(deliverer->metrics().acknowledged, 2);
}

TEST_F(DurableScheduleHintsTest, WithHintsOffPollingDelivers) {
  auto deliverer = Connect(Options(false));
  auto scheduler = Connect(Options(false));
  ASSERT_NE(deliverer, nullptr);
  ASSERT_NE(scheduler, nullptr);
  Deliveries seen;
  ASSERT_TRUE(deliverer->Start(seen.Recorder()).ok());
  absl::SleepFor(absl::Milliseconds(500));  // its first poll is done
  EXPECT_EQ(Listeners(), 0);
  ASSERT_TRUE(scheduler->ScheduleAfter("polled", absl::Milliseconds(100)).ok());
  // Nothing looks at the shard before the next poll, kLongPoll after the
  // first: not delivered early (a slow machine only makes it later)...
  EXPECT_FALSE(DeliveredWithin(seen, "polled", absl::Seconds(2)));
  // ...and delivered then.
  EXPECT_TRUE(DeliveredWithin(seen, "polled", testing::kPatience));
  ASSERT_TRUE(deliverer->Stop().ok());
  EXPECT_EQ(seen.Total(), 1u);
}

// An ACL user without the hint channel (Redis 7's default for a new user):
// the schedule script's PUBLISH is refused inside redis.pcall, so scheduling
// still succeeds; the listener's SUBSCRIBE is refused (a warning, retried);
// polling delivers.
TEST_F(DurableScheduleHintsTest, AUserWithoutTheChannelSchedulesAndIsPolled) {
  auto acl = redis_->Command({"ACL", "SETUSER", "nochannel", "on", ">secret",
                              std::string("~{") + kKeyspace + ":*",
                              "resetchannels", "+@all"});
  ASSERT_TRUE(acl.ok() && !acl->is_error()) << acl.status() << acl->str;
  DurableTimerOptions o = Options(true);
  o.username = "nochannel";
  o.password = "secret";
  o.poll_interval = absl::Seconds(1);
  auto deliverer = Connect(o);
  auto scheduler = Connect(o);
  ASSERT_NE(deliverer, nullptr);
  ASSERT_NE(scheduler, nullptr);
  Deliveries seen;
  ASSERT_TRUE(deliverer->Start(seen.Recorder()).ok());
  ASSERT_TRUE(scheduler->ScheduleAfter("denied", absl::Milliseconds(100)).ok());
  EXPECT_TRUE(DeliveredWithin(seen, "denied", testing::kPatience));
  EXPECT_EQ(Listeners(), 0);
  ASSERT_TRUE(deliverer->Stop().ok());
  EXPECT_EQ(seen.Total(), 1u);
}

}  // namespace
}  // namespace tickwheel::durable
