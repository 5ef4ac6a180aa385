// IdleTracker on a ManualClock: when on_idle fires (never before recorded
// activity + idle timeout, within a refresh period and a tick after it), the
// lazy re-arm, unregister/re-register/destruction semantics, the
// Activate/Deactivate life cycle, the task executor, metrics. Every wait on the
// tracker's worker is a ManualClock settle; the few real-time waits (a blocked
// callback) only check that something has *not* happened yet.

#include "tickwheel/timer/idle_tracker.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/idle/idle_entry.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace internal {

// Reaches into an entry to drive the stale-entry rule directly.
class IdleEntryTestPeer {
 public:
  static IdleEntry* Entry(const IdleHandle& h) { return h.entry(); }
  static uint64_t Version(IdleEntry* e) {
    std::lock_guard<IdleSpinLock> l(e->lock_);
    return e->version_;
  }
  // A wheel timeout armed with `version` comes up.
  static void ComeUp(IdleEntry* e, uint64_t version) {
    e->OnTimeout(version, nullptr);
  }
  // Whether the handle's reference to the tracker's core has expired.
  static bool CoreGone(const IdleHandle& h) { return h.core_.expired(); }
};

}  // namespace internal

namespace {

using internal::IdleEntryTestPeer;

using ::tickwheel::testing::kMs;
constexpr absl::Duration kTick = absl::Milliseconds(10);

// Records (id, clock time) of each on_idle call; thread-safe.
class Recorder {
 public:
  explicit Recorder(std::shared_ptr<ManualClock> clock) : clock_(clock) {}
  absl::AnyInvocable<void()> Callback(int id) {
    return [this, id] {
      std::lock_guard<std::mutex> l(mu_);
      events_.push_back({id, clock_->NowNanos() / kMs});
    };
  }
  std::vector<std::pair<int, int64_t>> events() {
    std::lock_guard<std::mutex> l(mu_);
    return events_;
  }
  size_t size() { return events().size(); }

 private:
  std::shared_ptr<ManualClock> clock_;
  std::mutex mu_;
  std::vector<std::pair<int, int64_t>> events_;
};

// Counts live copies of a capture: captures released <=> count back to 0.
struct Sentinel {
  explicit Sentinel(std::shared_ptr<int> p) : p(std::move(p)) {}
  std::shared_ptr<int> p;
};

class IdleTrackerTest : public ::testing::Test {
 protected:
  std::unique_ptr<IdleTracker> Make(IdleTrackerOptions o = {}) {
    o.clock = clock_;
    o.tick_duration = kTick;
    o.ticks_per_wheel = 64;
    if (o.default_idle_timeout == absl::Seconds(60)) {
      o.default_idle_timeout = absl::Milliseconds(100);
    }
    auto t = IdleTracker::Create(std::move(o));
    EXPECT_TRUE(t.ok()) << t.status();
    return *std::move(t);
  }
  // Advances tick by tick, letting the worker finish each one.
  void Step(absl::Duration d) { clock_->AdvanceInSteps(d, kTick); }
  int64_t NowMs() { return clock_->NowNanos() / kMs; }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  Recorder rec_{clock_};
};

TEST_F(IdleTrackerTest, CreateRejectsBadOptions) {
  IdleTrackerOptions o;
  o.default_idle_timeout = absl::ZeroDuration();
  EXPECT_EQ(IdleTracker::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = {};
  o.tick_duration = absl::Milliseconds(-1);
  EXPECT_EQ(IdleTracker::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = {};
  o.ticks_per_wheel = 0;
  EXPECT_EQ(IdleTracker::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(IdleTrackerTest, RegisterRejectsBadArguments) {
  auto tracker = Make();
  EXPECT_EQ(tracker->Register(nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker->Register([] {}, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tracker->Register([] {}, absl::Seconds(-1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  IdleHandle empty;
  EXPECT_FALSE(empty);
  empty.touch();  // harmless
  EXPECT_FALSE(empty.unregister());
  EXPECT_EQ(empty.reregister([] {}).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(IdleTrackerTest, FiresAfterIdleTimeoutNotBefore) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  EXPECT_TRUE(h.isRegistered());
  EXPECT_EQ(h.idleTimeout(), absl::Milliseconds(100));
  Step(absl::Milliseconds(90));
  EXPECT_EQ(rec_.size(), 0u);
  Step(absl::Milliseconds(10));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{1, 100}}));
  EXPECT_FALSE(h.isRegistered());
  EXPECT_TRUE(h.hasFired());
  Step(absl::Milliseconds(500));
  EXPECT_EQ(rec_.size(), 1u) << "fires once per registration";
  EXPECT_FALSE(h.unregister()) << "already fired";
  IdleTrackerMetrics m = tracker->metrics();
  EXPECT_EQ(m.fired, 1);
  EXPECT_EQ(m.tracked, 0);
  EXPECT_EQ(m.rearmed, 0);
  EXPECT_EQ(m.worst_lateness, absl::ZeroDuration());
}

TEST_F(IdleTrackerTest, TouchDefersByExactlyTheRemainingTime) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  Step(absl::Milliseconds(50));
  h.touch();  // at 50 ms; the coarse clock's ceiling is 60 ms
  Step(absl::Milliseconds(100));  // the check at 100 ms re-arms for 60 ms
  EXPECT_EQ(rec_.size(), 0u);
  EXPECT_EQ(tracker->metrics().rearmed, 1);
  Step(absl::Milliseconds(10));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{1, 160}}));
}

TEST_F(IdleTrackerTest, PerObjectTimeoutOverridesDefault) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle a =
      tracker->Register(rec_.Callback(1), absl::Milliseconds(30)).value();
  IdleHandle b = tracker->Register(rec_.Callback(2)).value();
  Step(absl::Milliseconds(200));
  EXPECT_EQ(rec_.events(),
            (std::vector<std::pair<int, int64_t>>{{1, 30}, {2, 100}}));
}

TEST_F(IdleTrackerTest, BusyObjectCostsOneTimerOperationPerTimeout) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  for (int i = 0; i < 100; ++i) {  // one touch per tick for one second
    h.touch();
    Step(kTick);
  }
  EXPECT_EQ(rec_.size(), 0u);
  IdleTrackerMetrics m = tracker->metrics();
  // 100 touches; the entry came up about once per 100 ms and was re-armed.
  EXPECT_GE(m.rearmed, 8);
  EXPECT_LE(m.rearmed, 11);
  EXPECT_EQ(m.timer_ops, m.rearmed + 1);  // + the Register()
}

// Randomised but seeded: whatever the touch pattern, on_idle runs at or
// after (last touch + timeout) and at most refresh + 2 ticks after it.
TEST_F(IdleTrackerTest, NeverEarlyAlwaysWithinBound) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  constexpr int kN = 40;
  std::mt19937 rng(12345);
  std::vector<IdleHandle> handles;
  std::vector<int64_t> timeout_ms(kN), last_ms(kN, 0), stop_touching(kN);
  for (int i = 0; i < kN; ++i) {
    timeout_ms[i] = 20 + static_cast<int64_t>(rng() % 300);  // not tick-aligned
    stop_touching[i] = static_cast<int64_t>(rng() % 600);
    handles.push_back(
        tracker->Register(rec_.Callback(i), absl::Milliseconds(timeout_ms[i]))
            .value());
  }
  for (int64_t t = 0; t < 1500; t += 10) {
    for (int i = 0; i < kN; ++i) {
      if (t < stop_touching[i] && handles[i].isRegistered() && rng() % 3 == 0) {
        handles[i].touch();
        last_ms[i] = NowMs();
      }
    }
    Step(kTick);
  }
  std::vector<int> seen(kN, 0);
  for (auto [id, at] : rec_.events()) {
    ++seen[id];
    EXPECT_GE(at, last_ms[id] + timeout_ms[id]) << "entry " << id;
    EXPECT_LE(at, last_ms[id] + timeout_ms[id] + 30) << "entry " << id;
  }
  for (int i = 0; i < kN; ++i) EXPECT_EQ(seen[i], 1) << "entry " << i;
  EXPECT_LE(tracker->metrics().worst_lateness, absl::Milliseconds(20));
}

TEST_F(IdleTrackerTest, UnregisterReleasesCapturesAtOnce) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  auto token = std::make_shared<int>(0);
  IdleHandle h =
      tracker->Register([s = Sentinel(token), this] { rec_.Callback(1)(); })
          .value();
  Step(absl::Milliseconds(20));
  EXPECT_EQ(token.use_count(), 2);
  const int64_t pending_before = tracker->timerMetrics().pending;
  EXPECT_TRUE(h.unregister());
  EXPECT_EQ(token.use_count(), 1) << "captures released before returning";
  EXPECT_EQ(tracker->timerMetrics().pending, pending_before - 1)
      << "the wheel timeout was cancelled";
  EXPECT_FALSE(h.isRegistered());
  EXPECT_FALSE(h.unregister());
  Step(absl::Milliseconds(300));
  EXPECT_EQ(rec_.size(), 0u);
  EXPECT_EQ(tracker->metrics().tracked, 0);
}

TEST_F(IdleTrackerTest, DestroyingHandleUnregisters) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  auto token = std::make_shared<int>(0);
  {
    IdleHandle h =
        tracker->Register([s = Sentinel(token), this] { rec_.Callback(1)(); })
            .value();
    IdleHandle moved = std::move(h);
    EXPECT_FALSE(h);
    EXPECT_TRUE(moved.isRegistered());
  }
  EXPECT_EQ(token.use_count(), 1);
  Step(absl::Milliseconds(300));
  EXPECT_EQ(rec_.size(), 0u);
  // Move-assigning over a registered handle unregisters it, too.
  IdleHandle a = tracker->Register(rec_.Callback(2)).value();
  a = tracker->Register(rec_.Callback(3)).value();
  Step(absl::Milliseconds(100));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{3, 400}}));
}

TEST_F(IdleTrackerTest, ReregisterReplacesCallbackAndTimeout) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  auto token = std::make_shared<int>(0);
  IdleHandle h =
      tracker->Register([s = Sentinel(token), this] { rec_.Callback(1)(); })
          .value();
  Step(absl::Milliseconds(50));
  ASSERT_TRUE(h.reregister(rec_.Callback(2), absl::Milliseconds(200)).ok());
  EXPECT_EQ(token.use_count(), 1) << "old on_idle destroyed unrun";
  EXPECT_EQ(h.idleTimeout(), absl::Milliseconds(200));
  Step(absl::Milliseconds(190));
  EXPECT_EQ(rec_.size(), 0u);
  Step(absl::Milliseconds(10));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{2, 250}}));
  // After firing, the same object can be tracked again.
  ASSERT_TRUE(h.reregister(rec_.Callback(3)).ok());
  EXPECT_TRUE(h.isRegistered());
  Step(absl::Milliseconds(100));
  EXPECT_EQ(rec_.size(), 2u);
  EXPECT_EQ(rec_.events()[1], (std::pair<int, int64_t>{3, 350}));
  EXPECT_EQ(tracker->metrics().tracked, 0);
}

TEST_F(IdleTrackerTest, StaleEntriesAreDroppedAndCounted) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  internal::IdleEntry* e = IdleEntryTestPeer::Entry(h);
  const uint64_t v1 = IdleEntryTestPeer::Version(e);
  ASSERT_TRUE(h.reregister(rec_.Callback(2)).ok());
  EXPECT_GT(IdleEntryTestPeer::Version(e), v1);
  // The first registration's wheel entry comes up (as when the cancel in
  // reregister() loses to the worker claiming it): dropped, nothing fires.
  IdleEntryTestPeer::ComeUp(e, v1);
  EXPECT_EQ(tracker->metrics().stale_dropped, 1);
  EXPECT_EQ(rec_.size(), 0u);
  EXPECT_TRUE(h.isRegistered());
  // After unregister() every version is stale.
  const uint64_t v2 = IdleEntryTestPeer::Version(e);
  EXPECT_TRUE(h.unregister());
  IdleEntryTestPeer::ComeUp(e, v2);
  EXPECT_EQ(tracker->metrics().stale_dropped, 2);
  Step(absl::Milliseconds(300));
  EXPECT_EQ(rec_.size(), 0u);
}

TEST_F(IdleTrackerTest, RegisteredWhileInactiveStartsAtActivate) {
  auto tracker = Make();
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  EXPECT_TRUE(h.isRegistered());
  clock_->Advance(absl::Milliseconds(500));  // no worker yet
  ASSERT_TRUE(tracker->Activate().ok());     // at 500 ms
  Step(absl::Milliseconds(90));
  EXPECT_EQ(rec_.size(), 0u) << "inactive time is not idle time";
  Step(absl::Milliseconds(10));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{1, 600}}));
}

TEST_F(IdleTrackerTest, DeactivateLeavesObjectsDormantAndActivateRearms) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle a = tracker->Register(rec_.Callback(1)).value();
  IdleHandle b = tracker->Register(rec_.Callback(2)).value();
  Step(absl::Milliseconds(50));
  ASSERT_TRUE(tracker->Deactivate().ok());
  EXPECT_FALSE(tracker->isActive());
  EXPECT_EQ(tracker->metrics().tracked, 2);
  clock_->Advance(absl::Seconds(1));
  a.touch();  // works while dormant
  EXPECT_TRUE(a.isRegistered());
  EXPECT_TRUE(b.unregister()) << "unregister works while dormant";
  EXPECT_EQ(rec_.size(), 0u);
  ASSERT_TRUE(tracker->Activate().ok());  // at 1050 ms
  Step(absl::Milliseconds(90));
  EXPECT_EQ(rec_.size(), 0u);
  Step(absl::Milliseconds(10));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{1, 1150}}));
}

TEST_F(IdleTrackerTest, ActivationIsReferenceCounted) {
  auto tracker = Make();
  EXPECT_EQ(tracker->Deactivate().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(tracker->Activate().ok());
  ASSERT_TRUE(tracker->Activate().ok());
  EXPECT_EQ(tracker->metrics().active, 2);
  ASSERT_TRUE(tracker->Deactivate().ok());
  EXPECT_TRUE(tracker->isActive());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  Step(absl::Milliseconds(100));
  EXPECT_EQ(rec_.size(), 1u) << "still active after one of two Deactivate()s";
  ASSERT_TRUE(tracker->Deactivate().ok());
  EXPECT_FALSE(tracker->isActive());
  EXPECT_EQ(clock_->SleeperCount(), 0) << "the worker is gone";
  EXPECT_GT(tracker->timerMetrics().ticks, 0) << "last timer's metrics kept";
  EXPECT_EQ(tracker->Deactivate().code(),
            absl::StatusCode::kFailedPrecondition);
}

// With nothing tracked the coarse clock needs no refresh: the worker sleeps.
TEST_F(IdleTrackerTest, RefreshesOnlyWhileSomethingIsTracked) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  Step(absl::Seconds(1));
  EXPECT_EQ(tracker->metrics().refreshes, 0);
  EXPECT_EQ(tracker->timerMetrics().expired, 0);
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();  // at 1000 ms
  Step(absl::Milliseconds(50));
  EXPECT_EQ(tracker->metrics().refreshes, 5) << "one per tick while tracked";
  Step(absl::Milliseconds(50));
  EXPECT_EQ(rec_.events(), (std::vector<std::pair<int, int64_t>>{{1, 1100}}));
  // The refresh sharing the fire's tick may run before or after the check;
  // either way none publishes after it, and at most one more run finds
  // nothing to do.
  const int64_t refreshes = tracker->metrics().refreshes;
  const int64_t expired = tracker->timerMetrics().expired;
  Step(absl::Seconds(1));
  EXPECT_EQ(tracker->metrics().refreshes, refreshes);
  EXPECT_LE(tracker->timerMetrics().expired, expired + 1);
  EXPECT_EQ(tracker->timerMetrics().pending, 0);
}

TEST_F(IdleTrackerTest, TaskExecutorRunsOnIdleAndUnregisterCancelsQueued) {
  auto executor = std::make_shared<testing::QueueExecutor>();
  IdleTrackerOptions o;
  o.task_executor = testing::PostTo(executor);
  auto tracker = Make(std::move(o));
  ASSERT_TRUE(tracker->Activate().ok());
  auto token = std::make_shared<int>(0);
  IdleHandle a = tracker->Register(rec_.Callback(1)).value();
  IdleHandle b =
      tracker->Register([s = Sentinel(token), this] { rec_.Callback(2)(); })
          .value();
  IdleHandle c = tracker->Register(rec_.Callback(3)).value();
  Step(absl::Milliseconds(100));
  EXPECT_EQ(rec_.size(), 0u) << "handed to the executor, not run";
  EXPECT_TRUE(a.hasFired());
  EXPECT_TRUE(b.unregister()) << "queued but not started: never runs";
  EXPECT_EQ(token.use_count(), 1);
  std::vector<absl::AnyInvocable<void()>> run = executor->Take();
  ASSERT_EQ(run.size(), 3u);
  for (auto& f : run) f();
  EXPECT_EQ(rec_.events(),
            (std::vector<std::pair<int, int64_t>>{{1, 100}, {3, 100}}));
  EXPECT_EQ(tracker->metrics().fired, 2);
  // A closure the executor drops destroys on_idle unrun.
  auto token2 = std::make_shared<int>(0);
  IdleHandle d =
      tracker->Register([s = Sentinel(token2), this] { rec_.Callback(4)(); })
          .value();
  Step(absl::Milliseconds(100));
  ASSERT_EQ(executor->Take().size(), 1u);  // dropped unrun
  EXPECT_EQ(token2.use_count(), 1);
  EXPECT_EQ(rec_.size(), 2u);
  EXPECT_FALSE(d.unregister());
}

TEST_F(IdleTrackerTest, DestroyingTrackerDetachesHandles) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  auto token = std::make_shared<int>(0);
  IdleHandle h =
      tracker->Register([s = Sentinel(token), this] { rec_.Callback(1)(); })
          .value();
  EXPECT_FALSE(IdleEntryTestPeer::CoreGone(h));
  tracker.reset();
  EXPECT_EQ(token.use_count(), 1) << "on_idle destroyed with the tracker";
  EXPECT_EQ(clock_->SleeperCount(), 0);
  EXPECT_TRUE(IdleEntryTestPeer::CoreGone(h))
      << "the handle keeps only its entry and the context";
  h.touch();
  EXPECT_FALSE(h.isRegistered());
  EXPECT_FALSE(h.unregister());
  EXPECT_EQ(h.reregister([] {}).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(IdleTrackerTest, OnIdleMayUnregisterAndDestroyItsOwnHandle) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  auto slot = std::make_shared<IdleHandle>();
  std::atomic<bool> unregister_result{true};
  *slot = tracker
              ->Register([slot, &unregister_result] {
                unregister_result = slot->unregister();  // must not deadlock
                *slot = IdleHandle();  // destroys our own handle
              })
              .value();
  Step(absl::Milliseconds(100));
  EXPECT_FALSE(unregister_result.load());
  EXPECT_FALSE(*slot);
  EXPECT_EQ(tracker->metrics().fired, 1);
  slot.reset();
}

TEST_F(IdleTrackerTest, UnregisterWaitsForRunningOnIdle) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  std::latch started(1), release(1);
  std::atomic<bool> finished{false};
  IdleHandle h = tracker
                     ->Register([&] {
                       started.count_down();
                       release.wait();
                       finished = true;
                     })
                     .value();
  clock_->AwaitIdle();
  clock_->Advance(absl::Milliseconds(100));  // no settle: on_idle blocks
  started.wait();
  std::atomic<bool> returned{false};
  bool saw_finished = false;
  std::thread t([&] {
    EXPECT_FALSE(h.unregister());
    saw_finished = finished.load();
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "unregister returned while on_idle ran";
  release.count_down();
  t.join();
  EXPECT_TRUE(saw_finished);
  clock_->AwaitIdle();
}

TEST_F(IdleTrackerTest, DeactivateGivesUpAfterDrainTimeout) {
  IdleTrackerOptions o;
  o.drain_timeout = absl::Milliseconds(50);
  auto tracker = Make(std::move(o));
  ASSERT_TRUE(tracker->Activate().ok());
  std::latch started(1), release(1);
  IdleHandle h = tracker
                     ->Register([&] {
                       started.count_down();
                       release.wait();
                     })
                     .value();
  clock_->AwaitIdle();
  clock_->Advance(absl::Milliseconds(100));
  started.wait();
  EXPECT_EQ(tracker->Deactivate().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(tracker->isActive());
  release.count_down();
  // A new activation works while the old timer finishes stopping.
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle g = tracker->Register(rec_.Callback(2)).value();
  ASSERT_TRUE(tracker->Deactivate().ok());
}

TEST_F(IdleTrackerTest, DeactivateFromOnIdleDoesNotWaitForItself) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  std::atomic<int> code{-1};
  IdleTracker* raw = tracker.get();
  IdleHandle h = tracker
                     ->Register([raw, &code] {
                       code = static_cast<int>(raw->Deactivate().code());
                     })
                     .value();
  Step(absl::Milliseconds(100));
  EXPECT_EQ(code.load(), static_cast<int>(absl::StatusCode::kOk));
  EXPECT_FALSE(tracker->isActive());
  // The stop finishes in the background; destroying the tracker waits for it.
  tracker.reset();
}

TEST_F(IdleTrackerTest, MetricsFormatWithFmt) {
  auto tracker = Make();
  ASSERT_TRUE(tracker->Activate().ok());
  IdleHandle h = tracker->Register(rec_.Callback(1)).value();
  Step(absl::Milliseconds(100));
  const std::string s = fmt::format("{}", tracker->metrics());
  EXPECT_NE(s.find("tracked=0 fired=1 rearmed=0 stale_dropped=0"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("worst_lateness=0"), std::string::npos) << s;
  EXPECT_EQ(fmt::format("{:>5}", IdleTrackerMetrics{}).size(),
            IdleTrackerMetrics{}.ToString().size());
  EXPECT_NE(fmt::format("{}", tracker->timerMetrics()).find("expired="),
            std::string::npos);
}

}  // namespace
}  // namespace tickwheel
