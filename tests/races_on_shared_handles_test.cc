// tests/races_on_shared_handles_test.cc
// -----------------------------------------------------------------------------
// Targeted races on one Timeout object used by several threads at once, as
// the API allows ("any thread may call any method on any copy", and cancel()
// and copying are const): a request deadline that both the reply path and an
// abort path may cancel, a handle kept in a shared map and copied out by
// readers. Each test pins one interleaving family:
//
//   * two or four threads cancelling through the one handle: one wins;
//   * one thread cancelling while others copy and drop the handle: no
//     reference is lost;
//   * threads cancelling, copying and querying one set of handles while the
//     worker expires them and stop() races them all;
//   * threads cancelling while the Timer is destroyed, and the handles
//     outliving it.
//
// (The producers' side, newTimeout() from several threads racing each other,
// the limit and stop(), is races_with_producers_test.)
//
// Each test checks the exactly-once ledger: a task runs, or exactly one
// cancel() returns true for it, or stop() returns it; its captures are
// destroyed exactly once; the handles read what happened; pendingTimeouts()
// ends at 0, and stop() and ~Timer return (a hang aborts the test with a
// message instead of timing out silently). The races are real-clock races
// between threads; the tests assert no duration. Under --config=interleave
// every atomic step of the hot paths may yield or sleep, which makes the
// rare interleavings common. The random soak of the same guarantee, with
// producers and tasks that reschedule, is stress_test.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::LiveCount;
using ::tickwheel::testing::Probe;
using ::tickwheel::testing::ProbeTask;
using ::tickwheel::testing::Tick;

// Runs `fn` and aborts the process with a message if it has not returned
// within `limit`: a hang is the failure these tests look for, and an abort
// names it where a test timeout would not.
template <typename F>
auto MustReturnWithin(std::chrono::seconds limit, const char* what, F&& fn) {
  auto result = std::async(std::launch::async, std::forward<F>(fn));
  if (result.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "%s did not return within %lld s\n", what,
                 static_cast<long long>(limit.count()));
    std::abort();
  }
  return result.get();
}

// Threads that run one job per round on the same shared object, released
// together so that their calls overlap.
class Crew {
 public:
  explicit Crew(int n) : n_(n) {}
  ~Crew() {
    quit_.store(true);
    round_.fetch_add(1);
    for (auto& t : threads_) t.join();
  }

  // Runs job(i) on thread i, all at once, and waits for all of them.
  template <typename Job>
  void RunRound(Job job) {
    if (threads_.empty()) Start();
    job_ = job;
    done_.store(0);
    round_.fetch_add(1);
    while (done_.load() < n_) std::this_thread::yield();
  }

 private:
  void Start() {
    for (int i = 0; i < n_; ++i) {
      threads_.emplace_back([this, i] {
        int seen = 0;
        while (true) {
          while (round_.load() == seen) std::this_thread::yield();
          seen = round_.load();
          if (quit_.load()) return;
          job_(i);
          done_.fetch_add(1);
        }
      });
    }
  }

  const int n_;
  std::vector<std::thread> threads_;
  std::function<void(int)> job_;  // written before round_ moves
  std::atomic<int> round_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> quit_{false};
};

// A timer whose worker sleeps through the test: one anchor timeout far away
// keeps it from waking for each new timeout (a 1 s tick, timeouts 100 s
// away), so that cancels find their nodes still in the producer's lane.
struct SleepyTimer {
  SleepyTimer() : timer(Timer::Create(Tick(absl::Seconds(1))).value()) {
    anchor =
        timer->newTimeout([](const Timeout&) {}, absl::Seconds(50)).value();
  }
  ~SleepyTimer() {
    anchor.cancel();
    Timer* t = timer.get();
    MustReturnWithin(std::chrono::seconds(60), "~Timer", [t] {
      EXPECT_EQ(t->pendingTimeouts(), 0);
      absl::StatusOr<std::vector<Timeout>> left = t->stop();
      EXPECT_TRUE(left.ok());
      if (left.ok()) {
        EXPECT_TRUE(left->empty());
      }
    });
  }

  // A timeout 100 s away whose captures count themselves in `*alive`.
  Timeout Far(std::atomic<int>* alive) {
    return timer
        ->newTimeout([c = LiveCount(alive)](const Timeout&) {},
                     absl::Seconds(100))
        .value();
  }

  std::unique_ptr<Timer> timer;
  Timeout anchor;
};

void CancelOneHandleFromThreads(int threads, int rounds) {
  SleepyTimer sleepy;
  Crew crew(threads);
  int double_wins = 0, no_wins = 0, bad_destroys = 0;
  for (int r = 0; r < rounds; ++r) {
    std::atomic<int> alive{0};
    const Timeout shared = sleepy.Far(&alive);
    std::atomic<int> wins{0};
    crew.RunRound([&](int) {
      if (shared.cancel()) wins.fetch_add(1);
    });
    if (wins.load() > 1) ++double_wins;
    if (wins.load() == 0) ++no_wins;
    if (alive.load() != 0) ++bad_destroys;
    EXPECT_TRUE(shared.isCancelled());
    EXPECT_FALSE(shared.cancel());
  }
  EXPECT_EQ(double_wins, 0) << "rounds in which two cancel() returned true";
  EXPECT_EQ(no_wins, 0) << "rounds in which no cancel() returned true";
  EXPECT_EQ(bad_destroys, 0) << "rounds whose captures were not destroyed once";
  EXPECT_EQ(sleepy.timer->pendingTimeouts(), 1);  // the anchor
}

TEST(RacesOnSharedHandlesTest, TwoThreadsCancellingOneHandleWinOnce) {
  CancelOneHandleFromThreads(2, 3000);
}

TEST(RacesOnSharedHandlesTest, FourThreadsCancellingOneHandleWinOnce) {
  CancelOneHandleFromThreads(4, 1500);
}

// One thread cancels through the handle while the others copy it and drop
// the copies: the count of references must never be lost, or a copy's
// destructor frees the node under the handle (ASan reports it).
TEST(RacesOnSharedHandlesTest, CopyingWhileAnotherThreadCancelsKeepsTheNode) {
  SleepyTimer sleepy;
  Crew crew(3);
  int bad = 0;
  for (int r = 0; r < 2000; ++r) {
    std::atomic<int> alive{0};
    const Timeout shared = sleepy.Far(&alive);
    std::atomic<int> wins{0};
    crew.RunRound([&](int i) {
      if (i == 0) {
        if (shared.cancel()) wins.fetch_add(1);
        return;
      }
      for (int k = 0; k < 4; ++k) {
        Timeout copy = shared;
        Timeout moved = std::move(copy);
        if (moved != shared) wins.fetch_add(100);  // never
        (void)moved.isCancelled();
      }
    });
    if (wins.load() != 1 || alive.load() != 0) ++bad;
    EXPECT_TRUE(shared.isCancelled());
    EXPECT_FALSE(shared.isExpired());
  }
  EXPECT_EQ(bad, 0);
}

// Many threads share one set of handles, each cancelling, copying and
// querying them, while the worker expires some and stop() races them all.
// Every task must end exactly once: it ran, exactly one cancel() won it, or
// stop() returned it; its captures are destroyed exactly once; its handle
// reads expired or cancelled accordingly, and the timer's count of expired
// tasks is the number of runs.
struct Ledger {
  explicit Ledger(int n) : runs(n), wins(n), alive(n), in_stop(n, 0) {}
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<int>> wins;   // cancel() calls that returned true
  std::vector<std::atomic<int>> alive;  // live copies of the captures
  std::vector<int> in_stop;             // times stop() returned it
};

class SharedHandlesRound {
 public:
  static constexpr int kHandles = 400;
  static constexpr int kThreads = 4;

  SharedHandlesRound(uint32_t seed, bool use_executor)
      : seed_(seed), ledger_(kHandles) {
    TimerOptions options = Tick(absl::Milliseconds(1), 64);
    if (use_executor) {
      // Runs the task inline, on the worker: still another path through
      // the node's release.
      options.task_executor = [](absl::AnyInvocable<void()> run) { run(); };
    }
    timer_ = Timer::Create(std::move(options)).value();
  }

  void Run() {
    Schedule();
    const std::vector<Timeout> stopped = HammerWhileStopping();
    EXPECT_EQ(timer_->pendingTimeouts(), 0);
    for (const Timeout& s : stopped) {
      const auto it = std::find(handles_.begin(), handles_.end(), s);
      ASSERT_NE(it, handles_.end());
      ++ledger_.in_stop[it - handles_.begin()];
      EXPECT_TRUE(s.isCancelled());
      EXPECT_TRUE(s.takeTask() != nullptr);  // destroyed here
    }
    const int64_t expired = timer_->metrics().expired;
    MustReturnWithin(std::chrono::seconds(60), "~Timer",
                     [this] { timer_.reset(); });
    CheckLedger(expired);
  }

 private:
  // The handles, fixed before the threads start: a quarter far away (still
  // there at stop()), the rest due within the first six ticks.
  void Schedule() {
    std::mt19937 rng(seed_);
    handles_.reserve(kHandles);
    for (int id = 0; id < kHandles; ++id) {
      const absl::Duration delay =
          rng() % 4 == 0 ? absl::Hours(1) : absl::Microseconds(rng() % 6000);
      handles_.push_back(
          timer_
              ->newTimeout(
                  [this, id, c = LiveCount(&ledger_.alive[id])](
                      const Timeout&) { ledger_.runs[id].fetch_add(1); },
                  delay)
              .value());
    }
  }

  // kThreads threads cancel, copy and query random handles; halfway through
  // the first one's operations another thread calls stop().
  std::vector<Timeout> HammerWhileStopping() {
    std::atomic<bool> stopping{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 mine(seed_ * 31 + t);
        for (int op = 0; op < 3000; ++op) {
          Act(mine);
          if (op == 1500 && t == 0) stopping.store(true);
        }
      });
    }
    std::vector<Timeout> stopped;
    Timer* raw = timer_.get();
    std::thread stopper([&] {
      while (!stopping.load()) std::this_thread::yield();
      stopped = MustReturnWithin(std::chrono::seconds(60), "stop()",
                                 [raw] { return raw->stop().value(); });
    });
    for (auto& th : threads) th.join();
    stopper.join();
    return stopped;
  }

  void Act(std::mt19937& rng) {
    const int id = static_cast<int>(rng() % kHandles);
    const Timeout& h = handles_[id];
    switch (rng() % 4) {
      case 0:
      case 1:
        if (h.cancel()) ledger_.wins[id].fetch_add(1);
        break;
      case 2: {
        Timeout copy = h;
        (void)copy.isExpired();
        break;
      }
      default:
        (void)h.isCancelled();
    }
  }

  void CheckLedger(int64_t expired) {
    int bad = 0;
    int64_t runs = 0;
    for (int id = 0; id < kHandles; ++id) {
      const int ran = ledger_.runs[id].load(), won = ledger_.wins[id].load();
      const int stopped = ledger_.in_stop[id];
      const Timeout& h = handles_[id];
      runs += ran;
      const bool ok = ran + won + stopped == 1 &&
                      ledger_.alive[id].load() == 0 &&
                      h.isExpired() == (ran == 1) &&
                      h.isCancelled() == (won + stopped == 1);
      if (!ok && ++bad <= 10) {
        ADD_FAILURE() << "task " << id << ": ran " << ran << ", cancel() won "
                      << won << ", stopped " << stopped << ", live captures "
                      << ledger_.alive[id].load() << ", isExpired "
                      << h.isExpired() << ", isCancelled " << h.isCancelled();
      }
    }
    EXPECT_EQ(expired, runs) << "metrics().expired against the runs";
  }

  const uint32_t seed_;
  Ledger ledger_;
  std::unique_ptr<Timer> timer_;
  std::vector<Timeout> handles_;
};

TEST(RacesOnSharedHandlesTest, SharedHandlesRacingExpiryAndStopEndExactlyOnce) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    SharedHandlesRound(seed, seed % 3 == 0).Run();
  }
}

// Destroying the Timer while other threads cancel its timeouts is allowed,
// and the handles outlive it: every task ran at most once or was cancelled,
// its captures are destroyed, and afterwards each handle reads either expired
// or cancelled, cancel() returns false and takeTask() nothing.
TEST(RacesOnSharedHandlesTest,
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
