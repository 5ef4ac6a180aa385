// tests/durable/durable_dead_letter_test.cc
// -----------------------------------------------------------------------------
// max_attempts and the dead-letter set, on a real Redis. A timer whose
// handler fails max_attempts times is dead-lettered by the script that
// records the last failure -- in the shard's :dead set, in neither :due nor
// :leases, delivered no more -- with its payload, attempts and last error;
// so is one whose last attempt's lease ends unacknowledged (its process
// killed). A per-timer max_attempts overrides the process's. Dead letters
// are listed oldest first, page by page, each once; retried (due now or at
// a time, attempts from 0, delivered again; a second retry is false) one by
// one or all at once; purged one by one, before a time, or all; trimmed by
// retention. Pending() leaves them out; Cancel() and a new Schedule() of the
// same id take one out. The metric counts them.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <set>
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

namespace tickwheel::durable {
namespace {

using testing::Deliveries;
using testing::Event;
using testing::TestOptions;
using testing::WaitUntil;

class DurableDeadLetterTest : public testing::RedisTest {
 protected:
  std::unique_ptr<DurableTimer> Connect(DurableTimerOptions o) {
    absl::StatusOr<std::unique_ptr<DurableTimer>> t =
        DurableTimer::Connect(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }
  // Options whose failures come back at once (no back-off), so that a
  // timer runs out of attempts quickly.
  DurableTimerOptions Options(int max_attempts) {
    DurableTimerOptions o = TestOptions(*redis_);
    o.retry_backoff = absl::ZeroDuration();
    o.max_attempts = max_attempts;
    return o;
  }
  bool IsDead(DurableTimer& t, const std::string& id) {
    absl::StatusOr<TimerInfo> info = t.Get(id);
    return info.ok() && info->state == TimerState::kDeadLettered;
  }
  // Whether `id` is in `set` ("due", "leases", "dead") of its shard.
  bool InSet(const std::string& set, const std::string& id, int shards = 4) {
    for (int s = 0; s < shards; ++s) {
      auto r = redis_->Command(
          {"ZSCORE", "{tw-test:" + std::to_string(s) + "}:" + set, id});
      if (r.ok() && r->type == internal::RedisReply::Type::kString) {
        return true;
      }
    }
    return false;
  }
  std::vector<DeadLetter> AllDead(DurableTimer& t, int page_size = 100) {
    std::vector<DeadLetter> all;
    std::string token;
    do {
      absl::StatusOr<DeadLetterPage> page = t.ListDeadLetters(page_size, token);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      for (DeadLetter& d : page->dead_letters) all.push_back(std::move(d));
      token = page->next_page_token;
    } while (!token.empty());
    return all;
  }
};

TEST_F(DurableDeadLetterTest, ATimerThatFailsMaxAttemptsTimesIsDeadLettered) {
  auto timers = Connect(Options(3));
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(
      timers->ScheduleAfter("doomed", absl::ZeroDuration(), "pay").ok());
  ASSERT_TRUE(timers->ScheduleAfter("fine", absl::ZeroDuration(), "ok").ok());
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    if (t.id == "fine") return absl::OkStatus();
                    return absl::InternalError("boom " +
                                               std::to_string(t.attempt));
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "doomed"); }));
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("fine") == 1; }));
  ASSERT_TRUE(timers->Stop().ok());

  EXPECT_EQ(seen.Count("doomed"), 3);  // attempts 1, 2, 3; never a 4th
  const TimerInfo info = timers->Get("doomed").value();
  EXPECT_EQ(info.state, TimerState::kDeadLettered);
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.max_attempts, 3);
  EXPECT_EQ(info.payload, "pay");
  EXPECT_EQ(info.last_error, "INTERNAL: boom 3");
  EXPECT_NE(info.dead_lettered_at, absl::InfinitePast());
  // Atomically moved: in :dead, in neither :due nor :leases.
  EXPECT_TRUE(InSet("dead", "doomed"));
  EXPECT_FALSE(InSet("due", "doomed"));
  EXPECT_FALSE(InSet("leases", "doomed"));
  EXPECT_EQ(timers->Pending().value(), 0);

  const std::vector<DeadLetter> dead = AllDead(*timers);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].id, "doomed");
  EXPECT_EQ(dead[0].payload, "pay");
  EXPECT_EQ(dead[0].attempts, 3);
  EXPECT_EQ(dead[0].last_error, "INTERNAL: boom 3");
  EXPECT_EQ(dead[0].dead_lettered_at, info.dead_lettered_at);

  const DurableMetrics m = timers->metrics();
  EXPECT_EQ(m.dead_lettered, 1);
  EXPECT_EQ(m.handler_failures, 3);
  EXPECT_NE(m.ToString().find("dead_lettered=1"), std::string::npos);
}

TEST_F(DurableDeadLetterTest, APerTimerMaxAttemptsOverridesTheProcesss) {
  auto timers = Connect(Options(0));  // no limit by default
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(
      timers
          ->ScheduleAfter("once", absl::ZeroDuration(), "", {.max_attempts = 1})
          .ok());
  ASSERT_TRUE(timers->ScheduleAfter("forever", absl::ZeroDuration()).ok());
  ScheduleEntry e{"batch", absl::InfinitePast(), "b", {.max_attempts = 2}};
  ASSERT_TRUE(timers->ScheduleMany({&e, 1}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      timers->Schedule("x", absl::Now(), "", {.max_attempts = -1})));
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    // "forever" succeeds at its 5th attempt.
                    return t.id == "forever" && t.attempt >= 5
                               ? absl::OkStatus()
                               : absl::UnavailableError("not yet");
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "once"); }));
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "batch"); }));
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("forever") == 5; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.Count("once"), 1);
  EXPECT_EQ(seen.Count("batch"), 2);
  EXPECT_TRUE(absl::IsNotFound(timers->Get("forever").status()));
  EXPECT_EQ(timers->metrics().dead_lettered, 2);
}

TEST_F(DurableDeadLetterTest, ALeaseThatEndsOnTheLastAttemptDeadLetters) {
  testing::WorkerConfig w;
  w.redis = redis_->uri();
  w.lease = absl::Seconds(1);
  w.events = testing::TempPath("events");
  w.handler_sleep = absl::Seconds(60);  // it never finishes: killed
  w.owner = "doomed-worker";
  const std::string out = testing::TempPath("worker.out");
  absl::StatusOr<pid_t> worker = testing::SpawnWorker(w, out);
  ASSERT_TRUE(worker.ok()) << worker.status();
  auto has = [](std::string_view kind) {
    return [kind](const std::vector<Event>& e) {
      for (const Event& x : e) {
        if (x.kind == kind) return true;
      }
      return false;
    };
  };
  ASSERT_TRUE(
      testing::WaitForEvents(w.events, testing::kPatience, has("ready")))
      << testing::FileTail(out);
  DurableTimerOptions o = w.Options();
  o.owner = "survivor";
  auto timers = Connect(o);
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(timers
                  ->ScheduleAfter("held", absl::ZeroDuration(), "p",
                                  {.max_attempts = 1})
                  .ok());
  ASSERT_TRUE(
      testing::WaitForEvents(w.events, testing::kPatience, has("start")));
  const TimerInfo running = timers->Get("held").value();
  EXPECT_EQ(running.state, TimerState::kLeased);
  EXPECT_EQ(running.owner, "doomed-worker");
  EXPECT_EQ(running.attempts, 1);
  testing::SignalChild(*worker, SIGKILL);
  (void)testing::WaitChild(*worker, testing::kPatience);

  Deliveries seen;
  ASSERT_TRUE(timers->Start(seen.Recorder()).ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "held"); }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.Total(), 0u);  // its one attempt was the killed one
  const TimerInfo info = timers->Get("held").value();
  EXPECT_EQ(info.attempts, 1);
  EXPECT_NE(info.last_error.find("doomed-worker"), std::string::npos)
      << info.last_error;
  EXPECT_NE(info.last_error.find("lease"), std::string::npos);
  EXPECT_EQ(timers->metrics().dead_lettered, 1);
}

TEST_F(DurableDeadLetterTest, RetryPutsItBackOnceWithItsAttemptsReset) {
  auto timers = Connect(Options(1));
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(timers->ScheduleAfter("r", absl::ZeroDuration(), "pr").ok());
  ASSERT_TRUE(timers->ScheduleAfter("later", absl::ZeroDuration(), "pl").ok());
  std::atomic<bool> succeed{false};
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    return succeed ? absl::OkStatus()
                                   : absl::UnavailableError("down");
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil(
      [&] { return IsDead(*timers, "r") && IsDead(*timers, "later"); }));
  EXPECT_FALSE(timers->RetryDeadLetter("unknown").value());
  succeed = true;

  // Due at a given time: scheduled for then, not delivered before.
  const absl::Time at = absl::Now() + absl::Hours(1);
  ASSERT_TRUE(timers->RetryDeadLetter("later", at).value());
  const TimerInfo later = timers->Get("later").value();
  EXPECT_EQ(later.state, TimerState::kScheduled);
  EXPECT_EQ(later.attempts, 0);
  EXPECT_EQ(later.last_error, "");
  EXPECT_LE(absl::AbsDuration(later.next_delivery - at), absl::Microseconds(1));
  EXPECT_EQ(later.payload, "pl");

  // Due now: delivered again as attempt 1, then acknowledged.
  ASSERT_TRUE(timers->RetryDeadLetter("r").value());
  EXPECT_FALSE(timers->RetryDeadLetter("r").value());  // not dead anymore
  ASSERT_TRUE(WaitUntil([&] { return seen.Count("r") == 2; }));
  ASSERT_TRUE(
      WaitUntil([&] { return absl::IsNotFound(timers->Get("r").status()); }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_EQ(seen.All().back().id, "r");
  EXPECT_EQ(seen.All().back().attempt, 1);
  EXPECT_EQ(seen.All().back().payload, "pr");
  EXPECT_EQ(seen.Count("later"), 1);
  EXPECT_TRUE(AllDead(*timers).empty());
  EXPECT_EQ(timers->Pending().value(), 1);  // "later", in an hour
}

TEST_F(DurableDeadLetterTest, ListPagesOldestFirstEachOnceAndRetryAllTakesAll) {
  auto timers = Connect(Options(1));
  ASSERT_NE(timers, nullptr);
  std::vector<ScheduleEntry> entries;
  for (int i = 0; i < 25; ++i) {
    entries.push_back({"t" + std::to_string(i), absl::InfinitePast(), "p"});
  }
  ASSERT_TRUE(timers->ScheduleMany(entries).ok());
  std::atomic<bool> succeed{false};
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    return succeed ? absl::OkStatus()
                                   : absl::InternalError("no");
                  })
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return timers->metrics().dead_lettered == 25; }));
  const std::vector<DeadLetter> all = AllDead(*timers, 7);
  ASSERT_EQ(all.size(), 25u);
  std::set<std::string> ids;
  for (size_t i = 0; i < all.size(); ++i) {
    ids.insert(all[i].id);
    if (i > 0) {
      EXPECT_TRUE(all[i - 1].dead_lettered_at < all[i].dead_lettered_at ||
                  (all[i - 1].dead_lettered_at == all[i].dead_lettered_at &&
                   all[i - 1].id < all[i].id))
          << i;
    }
  }
  EXPECT_EQ(ids.size(), 25u);
  EXPECT_TRUE(absl::IsInvalidArgument(timers->ListDeadLetters(0).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(timers->ListDeadLetters(5, "junk").status()));

  succeed = true;
  EXPECT_EQ(timers->RetryAllDeadLetters().value(), 25);
  EXPECT_EQ(timers->RetryAllDeadLetters().value(), 0);
  ASSERT_TRUE(WaitUntil([&] { return seen.Total() == 50; }));
  ASSERT_TRUE(WaitUntil([&] { return timers->Pending().value() == 0; }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_TRUE(AllDead(*timers).empty());
}

TEST_F(DurableDeadLetterTest, PurgeOneBeforeATimeOrAllAndCancelAndReschedule) {
  auto timers = Connect(Options(1));
  ASSERT_NE(timers, nullptr);
  Deliveries seen;
  ASSERT_TRUE(timers
                  ->Start([&](const FiredTimer& t) {
                    seen.Add(t);
                    return absl::InternalError("no");
                  })
                  .ok());
  auto bury = [&](const std::string& id) {
    EXPECT_TRUE(timers->ScheduleAfter(id, absl::ZeroDuration(), id).ok());
    EXPECT_TRUE(WaitUntil([&] { return IsDead(*timers, id); })) << id;
  };
  bury("old");
  const absl::Time between =
      timers->Get("old").value().dead_lettered_at + absl::Microseconds(1);
  ASSERT_TRUE(WaitUntil([&] {
    return absl::FromUnixMicros(redis_->TimeMicros().value()) > between;
  }));
  for (const char* id : {"a", "b", "c", "d"}) bury(id);
  ASSERT_TRUE(timers->Stop().ok());

  EXPECT_EQ(timers->PurgeDeadLetters(between).value(), 1);  // "old"
  EXPECT_TRUE(absl::IsNotFound(timers->Get("old").status()));
  EXPECT_TRUE(timers->PurgeDeadLetter("a").value());
  EXPECT_FALSE(timers->PurgeDeadLetter("a").value());
  EXPECT_TRUE(absl::IsNotFound(timers->Get("a").status()));
  // A live timer is not a dead letter: left alone.
  ASSERT_TRUE(timers->ScheduleAfter("live", absl::Hours(1)).ok());
  EXPECT_FALSE(timers->PurgeDeadLetter("live").value());
  EXPECT_EQ(timers->Get("live").value().state, TimerState::kScheduled);
  // Cancel deletes a dead letter; a new Schedule() of its id replaces it.
  EXPECT_TRUE(timers->Cancel("b").value());
  EXPECT_TRUE(absl::IsNotFound(timers->Get("b").status()));
  ASSERT_TRUE(timers->ScheduleAfter("c", absl::Hours(1), "new").ok());
  const TimerInfo c = timers->Get("c").value();
  EXPECT_EQ(c.state, TimerState::kScheduled);
  EXPECT_EQ(c.attempts, 0);
  EXPECT_EQ(c.payload, "new");
  EXPECT_EQ(c.last_error, "");
  EXPECT_FALSE(InSet("dead", "c"));
  const std::vector<DeadLetter> left = AllDead(*timers);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id, "d");
  EXPECT_EQ(timers->PurgeDeadLetters().value(), 1);
  EXPECT_TRUE(AllDead(*timers).empty());
  EXPECT_EQ(timers->Pending().value(), 2);  // "live" and "c"
  // Nothing of the purged, cancelled or replaced dead letters is left:
  // records and payloads of the two live timers, their max attempts, no
  // errors, no dead letters.
  int64_t states = 0, payloads = 0, limits = 0, errors = 0, dead = 0;
  for (int s = 0; s < 4; ++s) {
    const std::string tag = "{tw-test:" + std::to_string(s) + "}";
    states += redis_->Command({"HLEN", tag + ":state"})->AsInt();
    payloads += redis_->Command({"HLEN", tag + ":payload"})->AsInt();
    limits += redis_->Command({"HLEN", tag + ":limit"})->AsInt();
    errors += redis_->Command({"HLEN", tag + ":error"})->AsInt();
    dead += redis_->Command({"ZCARD", tag + ":dead"})->AsInt();
  }
  EXPECT_EQ(states, 2);
  EXPECT_EQ(payloads, 2);
  EXPECT_EQ(limits, 2);
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(dead, 0);
}

TEST_F(DurableDeadLetterTest, RetentionTrimsOldDeadLettersAsNewOnesCome) {
  DurableTimerOptions o = Options(1);
  o.shards = 1;
  o.keyspace = "tw-test";
  o.dead_letter_retention = absl::Milliseconds(1);
  auto timers = Connect(o);
  ASSERT_NE(timers, nullptr);
  ASSERT_TRUE(
      timers
          ->Start([&](const FiredTimer&) { return absl::InternalError("no"); })
          .ok());
  ASSERT_TRUE(timers->ScheduleAfter("first", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "first"); }));
  const absl::Time dead_at = timers->Get("first").value().dead_lettered_at;
  ASSERT_TRUE(WaitUntil([&] {
    return absl::FromUnixMicros(redis_->TimeMicros().value()) >
           dead_at + absl::Milliseconds(2);
  }));
  ASSERT_TRUE(timers->ScheduleAfter("second", absl::ZeroDuration()).ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDead(*timers, "second"); }));
  ASSERT_TRUE(timers->Stop().ok());
  EXPECT_TRUE(absl::IsNotFound(timers->Get("first").status()));
  const std::vector<DeadLetter> left = AllDead(*timers);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id, "second");
}

}  // namespace
}  // namespace tickwheel::durable
