// IdleTracker under real concurrency (real clock, 1 ms ticks): unregister()
// racing the fire is all-or-nothing, on_idle runs at most once per
// registration while other threads touch and re-register, and Activate /
// Deactivate cycles race registrations safely; each case runs on the
// tracker's own timer and on an application's Timer (IdleTrackerOptions::
// timer), which must be left with none of the tracker's timeouts once the
// tracker is deactivated. The assertions hold whatever the interleaving; the
// sanitizers check the rest. Each case is bounded to well under a second of
// work.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::WaitUntil;

class IdleTrackerConcurrencyTest : public ::testing::TestWithParam<bool> {
 protected:
  // On its own timer, or (GetParam()) on the application's timer_.
  std::unique_ptr<IdleTracker> MakeTracker() {
    IdleTrackerOptions o;
    o.tick_duration = absl::Milliseconds(1);
    o.default_idle_timeout = absl::Milliseconds(3);
    o.ticks_per_wheel = 64;
    if (GetParam()) {
      TimerOptions t;
      t.tick_duration = absl::Milliseconds(1);
      t.ticks_per_wheel = 64;
      timer_ = Timer::Create(t).value();
      o.timer = timer_;
    }
    return IdleTracker::Create(o).value();
  }

  // Once deactivated, the tracker leaves nothing on an application's timer:
  // a refresh that was running as the activation ended cancels what it
  // scheduled itself, so allow it a moment.
  void ExpectNothingLeftOnTheSharedTimer() {
    if (timer_ == nullptr) return;
    WaitUntil([&] { return timer_->pendingTimeouts() == 0; },
              absl::Seconds(10));
    EXPECT_EQ(timer_->pendingTimeouts(), 0);
    EXPECT_TRUE(timer_->newTimeout([] {}, absl::Milliseconds(1)).ok())
        << "the application's timer keeps running";
  }

  std::shared_ptr<Timer> timer_;
};

INSTANTIATE_TEST_SUITE_P(OwnAndSharedTimer, IdleTrackerConcurrencyTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "SharedTimer" : "OwnTimer";
                         });

// One registration of UnregisterRacingFireIsAllOrNothing: what its on_idle
// did, and whether the unregistering thread has reached it.
struct Slot {
  std::atomic<int> runs{0};
  std::atomic<bool> completed{false};
  std::atomic<bool> unregistered{false};
  std::atomic<bool> ran_after_unregister{false};
};

TEST_P(IdleTrackerConcurrencyTest, UnregisterRacingFireIsAllOrNothing) {
  auto tracker = MakeTracker();
  ASSERT_TRUE(tracker->Activate().ok());
  constexpr int kRounds = 10, kPerRound = 100;
  int ended_before = 0, fired_first = 0;
  std::mt19937 rng(7);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Slot> slots(kPerRound);
    std::vector<IdleHandle> handles;
    for (int i = 0; i < kPerRound; ++i) {
      Slot* s = &slots[i];
      handles.push_back(tracker
                            ->Register(
                                [s] {
                                  if (s->unregistered.load())
                                    s->ran_after_unregister = true;
                                  s->runs.fetch_add(1);
                                  std::this_thread::yield();
                                  s->completed = true;
                                },
                                absl::Microseconds(500 + rng() % 3000))
                            .value());
    }
    std::vector<int> order(kPerRound);
    for (int i = 0; i < kPerRound; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::thread unregisterer([&] {
      for (int i : order) {
        const bool ended = handles[i].unregister();
        // Right after return: either it never ran nor will, or it completed.
        const bool completed = slots[i].completed.load();
        slots[i].unregistered = true;
        if (ended) {
          ++ended_before;
          EXPECT_FALSE(completed);
        } else {
          ++fired_first;
          EXPECT_TRUE(completed) << "unregister returned while on_idle ran";
        }
        if (i % 7 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
    unregisterer.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (int i = 0; i < kPerRound; ++i) {
      EXPECT_LE(slots[i].runs.load(), 1);
      EXPECT_FALSE(slots[i].ran_after_unregister.load());
    }
  }
  fmt::print("unregister won {} times, the fire won {} times\n", ended_before,
             fired_first);
  EXPECT_EQ(ended_before + fired_first, kRounds * kPerRound);
  EXPECT_EQ(tracker->metrics().tracked, 0);
  ASSERT_TRUE(tracker->Deactivate().ok());
  ExpectNothingLeftOnTheSharedTimer();
}

TEST_P(IdleTrackerConcurrencyTest, TouchAndReregisterRaceTheWorker) {
  auto tracker = MakeTracker();
  ASSERT_TRUE(tracker->Activate().ok());
  constexpr int kHandles = 64;
  std::mutex mu;
  std::multiset<int64_t> fired_ids;
  std::atomic<int64_t> next_id{0};
  auto callback = [&](int64_t id) {
    return [&, id] {
      std::lock_guard<std::mutex> l(mu);
      fired_ids.insert(id);
    };
  };
  std::vector<IdleHandle> handles;
  for (int i = 0; i < kHandles; ++i) {
    handles.push_back(tracker->Register(callback(next_id++)).value());
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        handles[(n * 7 + t) % kHandles].touch();
      }
    });
  }
  threads.emplace_back([&] {
    std::mt19937 rng(3);
    while (!stop.load(std::memory_order_relaxed)) {
      const int i = static_cast<int>(rng() % kHandles);
      EXPECT_TRUE(handles[i]
                      .reregister(callback(next_id++),
                                  absl::Microseconds(200 + rng() % 2000))
                      .ok());
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  stop = true;
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> l(mu);
    for (int64_t id : fired_ids) {
      EXPECT_EQ(fired_ids.count(id), 1u)
          << "registration " << id << " fired twice";
    }
  }
  const IdleTrackerMetrics m = tracker->metrics();
  fmt::print("registrations={} {}\n", next_id.load(), m);
  handles.clear();
  EXPECT_EQ(tracker->metrics().tracked, 0);
  ASSERT_TRUE(tracker->Deactivate().ok());
  ExpectNothingLeftOnTheSharedTimer();
}

TEST_P(IdleTrackerConcurrencyTest, ActivateDeactivateCyclesRaceRegistrations) {
  auto tracker = MakeTracker();
  std::atomic<bool> stop{false};
  std::atomic<int> fired{0};
  std::thread user([&] {
    std::vector<IdleHandle> handles;
    std::mt19937 rng(11);
    while (!stop.load()) {
      auto h = tracker->Register([&] { fired.fetch_add(1); },
                                 absl::Microseconds(100 + rng() % 3000));
      ASSERT_TRUE(h.ok());
      handles.push_back(*std::move(h));
      for (auto& x : handles) x.touch();
      if (handles.size() > 50) {
        handles[rng() % handles.size()].unregister();
        handles.erase(handles.begin());
      }
    }
  });
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(tracker->Activate().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    ASSERT_TRUE(tracker->Deactivate().ok());
  }
  stop = true;
  user.join();
  const IdleTrackerMetrics m = tracker->metrics();
  fmt::print("fired={} {}\n", fired.load(), m);
  EXPECT_EQ(m.fired, fired.load());
  EXPECT_EQ(m.tracked, 0);
  EXPECT_EQ(m.active, 0);
  ExpectNothingLeftOnTheSharedTimer();
}

// Handles used on other threads while the tracker is destroyed: every call
// is safe, the registrations end with the tracker, and afterwards nothing of
// the tracker's keeps the application's Timer alive.
TEST_P(IdleTrackerConcurrencyTest, HandlesRaceTheTrackersDestruction) {
  auto tracker = MakeTracker();
  ASSERT_TRUE(tracker->Activate().ok());
  constexpr int kThreads = 2, kPerThread = 32;
  std::vector<std::vector<IdleHandle>> handles(kThreads);
  for (auto& mine : handles) {
    for (int i = 0; i < kPerThread; ++i) {
      mine.push_back(
          tracker->Register([] {}, absl::Microseconds(300 + 100 * i)).value());
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<IdleHandle>& mine = handles[t];
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        IdleHandle& h = mine[n % kPerThread];
        h.touch();
        if (n % 5 == 0) h.unregister();
        if (n % 5 == 1) h.reregister([] {}).IgnoreError();
        if (n % 97 == 0) std::this_thread::yield();
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  tracker.reset();
  // Let the threads go on with inert handles for a while.
  const uint64_t at_destruction = calls.load();
  WaitUntil([&] { return calls.load() >= at_destruction + 2000; },
            absl::Seconds(10));
  stop = true;
  for (auto& t : threads) t.join();
  for (auto& mine : handles) {
    for (IdleHandle& h : mine) {
      EXPECT_FALSE(h.isRegistered());
      EXPECT_FALSE(h.unregister());
      EXPECT_EQ(h.reregister([] {}).code(),
                absl::StatusCode::kFailedPrecondition);
    }
  }
  if (timer_ != nullptr) {
    const std::weak_ptr<Timer> weak = timer_;
    timer_.reset();
    EXPECT_TRUE(weak.expired()) << "the handles keep the Timer alive";
  }
}

}  // namespace
}  // namespace tickwheel
