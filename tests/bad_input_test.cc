// tests/bad_input_test.cc
// -----------------------------------------------------------------------------
// Bad input (issue #4, part 4): everything a user can hand the timer wrongly
// gets a clear absl::Status, and nothing crashes, leaks (ASan/LSan) or loses a
// task (every task is run, cancelled, returned by stop() or destroyed unrun,
// and its captures are destroyed exactly once). One test per item of the
// issue, in its order; the ManualClock keeps timing exact.

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::CapturedLog;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

// The same on the real clock with a 1 ms tick, so slots are freed by expiry
// and cancel() while producers race for them; tasks check the bound too.
TEST(BadInputTest, MaxPendingWhileTasksExpireAndAreCancelled) {
  constexpr int64_t kMax = 8;
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.max_pending_timeouts = kMax;
  auto timer = Timer::Create(options).value();
  std::atomic<int64_t> worst{0}, accepted{0}, ran{0}, cancelled{0};
  auto note = [&](int64_t n) {
    for (int64_t w = worst.load(); n > w && !worst.compare_exchange_weak(w, n);) {
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
  EXPECT_EQ(accepted.load(), ran.load() + cancelled.load() + static_cast<int64_t>(left));
}

// What is allowed around destruction (see docs/RELIABILITY.md): stop() while
// producers call newTimeout(), then join them, then destroy; cancel() racing
// the destructor; handles outliving the Timer; a task destroying its Timer.
// Destroying a Timer while other threads may still call its methods is not
// allowed (undefined behaviour, as for any object) and is not tested.
TEST(BadInputTest, DestroyAfterStoppingRacingProducers) {
  auto timer = Timer::Create(Tick(absl::Milliseconds(1))).value();
  std::atomic<bool> go{true};
  std::atomic<int64_t> ok{0}, ran{0};
  std::vector<std::thread> producers;
  for (int i = 0; i < 4; ++i) {
    producers.emplace_back([&] {
      while (go.load()) {
        auto r = timer->newTimeout([&](const Timeout&) { ran++; },
                                   absl::Microseconds(500));
        if (r.ok()) {
          ok++;
        } else {
          EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
          return;  // stopped: this producer is done with the timer
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const size_t left = timer->stop().value().size();
  go.store(false);
  for (auto& p : producers) p.join();
  timer.reset();  // nobody calls it any more: allowed
  EXPECT_EQ(ok.load(), ran.load() + static_cast<int64_t>(left));
}

TEST(BadInputTest, CancelRacingTheDestructorAndHandlesOutlivingTheTimer) {
  std::vector<std::shared_ptr<Probe>> probes;
  std::vector<Timeout> handles;
  auto timer = Timer::Create(Tick(absl::Milliseconds(1))).value();
  for (int i = 0; i < 2000; ++i) {
    probes.push_back(std::make_shared<Probe>());
    handles.push_back(timer->newTimeout(ProbeTask(probes.back()),
                                        absl::Microseconds(i % 3000)).value());
  }
  std::atomic<int64_t> cancelled{0};
  std::vector<std::thread> cancellers;
  for (int c = 0; c < 2; ++c) {
    cancellers.emplace_back([&, c] {
      for (size_t i = c; i < handles.size(); i += 2) cancelled += handles[i].cancel();
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
