// tests/races_with_producers_test.cc
// -----------------------------------------------------------------------------
// Targeted races on the producers' side: several threads calling newTimeout()
// at once, against stop(), against the limit while expiries and cancels free
// slots, against each other's cancels, on a real clock. Each test pins one
// property:
//
//   * stop() racing producers, then ~Timer once they have finished (the
//     order docs/RELIABILITY.md allows): every accepted task ran or came back
//     from stop(), every refused call failed with FailedPrecondition;
//   * max_pending_timeouts with tasks expiring and being cancelled while
//     producers race for the slots: never exceeded, as seen by producers and
//     by tasks, and nothing lost;
//   * pendingTimeouts() exact when threads cancel each other's timeouts;
//   * one thread's timeouts for the same tick run in the order it scheduled
//     them.
//
// (Races through one handle object are races_on_shared_handles_test; the
// random soak of both sides together is stress_test.) Waits are bounded
// generously; no assertion depends on the machine's speed.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::Tick;

// What is allowed around destruction (docs/RELIABILITY.md): stop() while
// producers call newTimeout(), let them see FailedPrecondition and finish,
// join them, then destroy the Timer. Each call that returned OK ran or came
// back from stop(); every call after stop() began failed, with
// FailedPrecondition only. Destroying a Timer while other threads may still
// call its methods is not allowed (undefined behaviour, as for any object)
// and is not tested.
TEST(RacesWithProducersTest, StopRacingProducersThenDestroyLosesNothing) {
  constexpr int kThreads = 3;
  for (int round = 0; round < 5; ++round) {
    auto timer = Timer::Create(Tick(absl::Milliseconds(1), 32)).value();
    std::atomic<int> accepted{0}, rejected{0}, ran{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> producers;
    for (int p = 0; p < kThreads; ++p) {
      producers.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < 2000; ++i) {
          absl::StatusOr<Timeout> t =
              timer->newTimeout([&](const Timeout&) { ran.fetch_add(1); },
                                absl::Milliseconds(i % 3 == 0 ? 0 : 1000));
          if (t.ok()) {
            accepted.fetch_add(1);
          } else {
            ASSERT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
            rejected.fetch_add(1);
          }
        }
      });
    }
    go.store(true);
    std::this_thread::sleep_for(std::chrono::microseconds(200 * round));
    const int left = static_cast<int>(timer->stop().value().size());
    for (auto& t : producers) t.join();
    EXPECT_EQ(timer->pendingTimeouts(), 0);
    timer.reset();  // nobody calls it any more: allowed
    // Every accepted task ran or was returned; none was lost.
    EXPECT_EQ(ran.load() + left, accepted.load()) << "round " << round;
    EXPECT_EQ(accepted.load() + rejected.load(), kThreads * 2000);
  }
}

// The limit on the real clock with a 1 ms tick, so that expiries and
// cancel()s free slots while producers race for them: neither the producers
// nor the tasks ever see more than max_pending_timeouts, and every accepted
// task ran, was cancelled or came back from stop().
TEST(RacesWithProducersTest, MaxPendingWhileTasksExpireAndAreCancelled) {
  constexpr int64_t kMax = 8;
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.max_pending_timeouts = kMax;
  auto timer = Timer::Create(options).value();
  std::atomic<int64_t> worst{0}, accepted{0}, ran{0}, cancelled{0};
  auto note = [&](int64_t n) {
    for (int64_t w = worst.load();
         n > w && !worst.compare_exchange_weak(w, n);) {
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 400; ++k) {
        auto r = timer->newTimeout(
            [&](const Timeout& self) {
              ran++;
              note(self.timer()->pendingTimeouts());
            },
            absl::Microseconds(100 * (k % 20)));
        note(timer->pendingTimeouts());
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
          std::this_thread::yield();
          continue;
        }
        accepted++;
        if ((k + i) % 3 == 0 && r->cancel()) cancelled++;
      }
    });
  }
  for (auto& th : threads) th.join();
  const size_t left = timer->stop().value().size();
  EXPECT_LE(worst.load(), kMax);
  EXPECT_EQ(accepted.load(),
            ran.load() + cancelled.load() + static_cast<int64_t>(left));
}

// Producers are sharded by thread and each shard counts its own
// reservations; a cancel() gives its slot back on the canceller's shard. The
// sum must stay exact however the work is spread, with and without a
// max_pending limit (which counts on one shard).
TEST(RacesWithProducersTest, PendingCountIsExactAcrossThreads) {
  for (int64_t max_pending : {int64_t{0}, int64_t{100000}}) {
    TimerOptions options = Tick(absl::Milliseconds(1), 64);
    options.max_pending_timeouts = max_pending;
    auto timer = Timer::Create(std::move(options)).value();
    constexpr int kThreads = 4, kPerThread = 3000;
    std::vector<std::vector<Timeout>> made(kThreads);
    std::vector<std::thread> threads;
    for (int p = 0; p < kThreads; ++p) {
      threads.emplace_back([&, p] {
        for (int i = 0; i < kPerThread; ++i) {
          made[p].push_back(
              timer->newTimeout([](const Timeout&) {}, absl::Hours(1)).value());
        }
      });
    }
    for (auto& t : threads) t.join();
    threads.clear();
    EXPECT_EQ(timer->pendingTimeouts(), kThreads * kPerThread);
    // Each thread cancels what another one scheduled, all but ten each.
    for (int p = 0; p < kThreads; ++p) {
      threads.emplace_back([&, p] {
        const std::vector<Timeout>& theirs = made[(p + 1) % kThreads];
        for (int i = 10; i < kPerThread; ++i) ASSERT_TRUE(theirs[i].cancel());
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(timer->pendingTimeouts(), kThreads * 10) << max_pending;
    std::vector<Timeout> left = timer->stop().value();
    EXPECT_EQ(left.size(), static_cast<size_t>(kThreads * 10));
    EXPECT_EQ(timer->pendingTimeouts(), 0);
  }
}

// Timeouts one thread schedules for the same tick run in the order it
// scheduled them, whatever other threads do meanwhile.
TEST(RacesWithProducersTest, OneThreadsTimeoutsRunInItsOrder) {
  auto timer = Timer::Create(Tick(absl::Milliseconds(1), 64)).value();
  constexpr int kThreads = 3, kPerThread = 2000;
  std::vector<std::vector<int>> ran(kThreads);  // written by the worker only
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kThreads; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(timer
                        ->newTimeout(
                            [&, p, i](const Timeout&) {
                              ran[p].push_back(i);
                              done.fetch_add(1, std::memory_order_release);
                            },
                            absl::Milliseconds(20))
                        .ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int waited = 0;
       done.load(std::memory_order_acquire) < kThreads * kPerThread &&
       waited < 30000;
       ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(done.load(std::memory_order_acquire), kThreads * kPerThread);
  for (int p = 0; p < kThreads; ++p) {
    ASSERT_EQ(ran[p].size(), static_cast<size_t>(kPerThread));
    EXPECT_TRUE(std::is_sorted(ran[p].begin(), ran[p].end())) << "thread " << p;
  }
}

}  // namespace
}  // namespace tickwheel
