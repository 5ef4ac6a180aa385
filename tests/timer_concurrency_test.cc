// tests/timer_concurrency_test.cc
// -----------------------------------------------------------------------------
// Several threads calling newTimeout(), cancel() and stop() at once, and
// destroying the Timer, on a real clock: nothing is lost and nothing runs
// twice. Every task is accounted for exactly once as run, cancelled, or
// returned by stop(); pendingTimeouts() stays exact and within
// max_pending_timeouts. CI runs it under every sanitizer and with
// --config=interleave. Waits are bounded generously; no assertion depends on
// the machine's speed.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

struct Ledger {
  explicit Ledger(int n) : runs(n), cancels(n) {}
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<int>> cancels;
};

TEST(TimerConcurrencyTest, ConcurrentScheduleAndCancelLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  auto timer = Timer::Create(Tick(absl::Milliseconds(1), 64)).value();
  Ledger ledger(kThreads * kPerThread);
  std::vector<std::vector<Timeout>> handles(kThreads);

  std::vector<std::thread> producers;
  for (int p = 0; p < kThreads; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937 rng(p);
      std::vector<Timeout>& mine = handles[p];
      for (int i = 0; i < kPerThread; ++i) {
        const int id = p * kPerThread + i;
        absl::StatusOr<Timeout> t = timer->newTimeout(
            [&ledger, id](const Timeout&) { ledger.runs[id].fetch_add(1); },
            absl::Milliseconds(rng() % 50));
        ASSERT_TRUE(t.ok()) << t.status();
        mine.push_back(*t);
        // Cancel a random earlier one of ours: some are pending, some have
        // run, some are being run right now.
        const Timeout& victim = mine[rng() % mine.size()];
        if (victim.cancel()) {
          ledger.cancels[&victim - mine.data() + p * kPerThread].fetch_add(1);
        }
      }
    });
  }
  for (auto& t : producers) t.join();

  // Wait (bounded) until everything not cancelled has run.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (timer->pendingTimeouts() > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(timer->pendingTimeouts(), 0);
  std::vector<Timeout> left = timer->stop().value();
  EXPECT_TRUE(left.empty());

  int ran = 0, cancelled = 0;
  for (int id = 0; id < kThreads * kPerThread; ++id) {
    const int r = ledger.runs[id].load();
    const int c = ledger.cancels[id].load();
    ASSERT_EQ(r + c, 1) << "task " << id << " ran " << r << " cancelled " << c;
    const Timeout& h = handles[id / kPerThread][id % kPerThread];
    EXPECT_EQ(h.isExpired(), r == 1);
    EXPECT_EQ(h.isCancelled(), c == 1);
    ran += r;
    cancelled += c;
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(timer->metrics().expired, ran);
}

// What is allowed around destruction (docs/RELIABILITY.md): stop() while
// producers call newTimeout(), let them see FailedPrecondition and finish,
// join them, then destroy the Timer. Each call that returned OK ran or came
// back from stop(); every call after stop() began failed, with
// FailedPrecondition only. Destroying a Timer while other threads may still
// call its methods is not allowed (undefined behaviour, as for any object)
// and is not tested.
TEST(TimerConcurrencyTest, StopRacingProducersThenDestroyLosesNothing) {
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

// Producers are sharded by thread and each shard counts its own
// reservations; a cancel() gives its slot back on the canceller's shard. The
// sum must stay exact however the work is spread, with and without a
// max_pending limit (which counts on one shard).
TEST(TimerConcurrencyTest, PendingCountIsExactAcrossThreads) {
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
TEST(TimerConcurrencyTest, OneThreadsTimeoutsRunInItsOrder) {
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

// The limit on the real clock with a 1 ms tick, so that expiries and
// cancel()s free slots while producers race for them: neither the producers
// nor the tasks ever see more than max_pending_timeouts, and every accepted
// task ran, was cancelled or came back from stop().
TEST(TimerConcurrencyTest, MaxPendingWhileTasksExpireAndAreCancelled) {
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

// Destroying the Timer while other threads cancel its timeouts is allowed,
// and the handles outlive it: every task ran at most once or was cancelled,
// its captures are destroyed, and afterwards each handle reads either expired
// or cancelled, cancel() returns false and takeTask() nothing.
TEST(TimerConcurrencyTest,
     CancelRacingTheDestructorAndHandlesOutlivingTheTimer) {
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> handles;
  auto timer = Timer::Create(Tick(absl::Milliseconds(1))).value();
  for (int i = 0; i < 2000; ++i) {
    probes.push_back(std::make_shared<Probe>());
    handles.push_back(
        timer
            ->newTimeout(ProbeTask(probes.back()), absl::Microseconds(i % 3000))
            .value());
  }
  std::atomic<int64_t> cancelled{0};
  std::vector<std::thread> cancellers;
  for (int c = 0; c < 2; ++c) {
    cancellers.emplace_back([&, c] {
      for (size_t i = c; i < handles.size(); i += 2)
        cancelled += handles[i].cancel();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  timer.reset();  // racing the cancellers: allowed
  for (auto& th : cancellers) th.join();
  int64_t ran = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    EXPECT_LE(probes[i]->runs.load(), 1);
    ran += probes[i]->runs.load();
    EXPECT_TRUE(probes[i]->captures_destroyed.load()) << i;
    EXPECT_FALSE(handles[i].cancel()) << "cancel() after the Timer is gone";
    EXPECT_TRUE(handles[i].takeTask() == nullptr);
    EXPECT_NE(handles[i].isExpired(), handles[i].isCancelled());
  }
  EXPECT_LE(ran + cancelled.load(), 2000);
}

}  // namespace
}  // namespace tickwheel
