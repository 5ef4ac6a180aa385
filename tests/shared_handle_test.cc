// tests/shared_handle_test.cc
// -----------------------------------------------------------------------------
// One Timeout object used by several threads at once, as the API allows ("any
// thread may call any method on any copy", and cancel() and copying are
// const): a request deadline that both the reply path and an abort path may
// cancel, a handle kept in a shared map and copied out by readers.
//
// Each test checks the exactly-once ledger: a task runs, or exactly one
// cancel() returns true for it, or stop() returns it; its captures are
// destroyed exactly once; pendingTimeouts() ends at 0, and stop() returns
// (a hang aborts the test with a message instead of timing out silently).
// The races are real-clock races between threads; the tests assert no
// duration. Under --config=interleave every atomic step of the hot paths may
// yield or sleep, which makes the rare interleavings common.

#include <algorithm>
#include <atomic>
#include <chrono>
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

// Counts the destructions of one task's captures.
class Counted {
 public:
  explicit Counted(std::atomic<int>* destroyed) : destroyed_(destroyed) {}
  Counted(Counted&& other) noexcept
      : destroyed_(std::exchange(other.destroyed_, nullptr)) {}
  Counted& operator=(Counted&&) = delete;
  ~Counted() {
    if (destroyed_ != nullptr) destroyed_->fetch_add(1);
  }

 private:
  std::atomic<int>* destroyed_;
};

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
  std::unique_ptr<Timer> timer;
  Timeout anchor;
};

void CancelOneHandleFromThreads(int threads, int rounds) {
  SleepyTimer sleepy;
  Crew crew(threads);
  int double_wins = 0, no_wins = 0, bad_destroys = 0;
  for (int r = 0; r < rounds; ++r) {
    std::atomic<int> destroyed{0};
    const Timeout shared =
        sleepy.timer
            ->newTimeout([c = Counted(&destroyed)](const Timeout&) {},
                         absl::Seconds(100))
            .value();
    std::atomic<int> wins{0};
    crew.RunRound([&](int) {
      if (shared.cancel()) wins.fetch_add(1);
    });
    if (wins.load() > 1) ++double_wins;
    if (wins.load() == 0) ++no_wins;
    if (destroyed.load() != 1) ++bad_destroys;
    EXPECT_TRUE(shared.isCancelled());
    EXPECT_FALSE(shared.cancel());
  }
  EXPECT_EQ(double_wins, 0) << "rounds in which two cancel() returned true";
  EXPECT_EQ(no_wins, 0) << "rounds in which no cancel() returned true";
  EXPECT_EQ(bad_destroys, 0) << "rounds whose captures were not destroyed once";
  EXPECT_EQ(sleepy.timer->pendingTimeouts(), 1);  // the anchor
}

TEST(SharedHandleTest, TwoThreadsCancellingOneHandleWinOnce) {
  CancelOneHandleFromThreads(2, 3000);
}

TEST(SharedHandleTest, FourThreadsCancellingOneHandleWinOnce) {
  CancelOneHandleFromThreads(4, 1500);
}

// One thread cancels through the handle while the others copy it and drop
// the copies: the count of references must never be lost, or a copy's
// destructor frees the node under the handle (ASan reports it).
TEST(SharedHandleTest, CopyingWhileAnotherThreadCancelsKeepsTheNode) {
  SleepyTimer sleepy;
  Crew crew(3);
  int bad = 0;
  for (int r = 0; r < 2000; ++r) {
    std::atomic<int> destroyed{0};
    const Timeout shared =
        sleepy.timer
            ->newTimeout([c = Counted(&destroyed)](const Timeout&) {},
                         absl::Seconds(100))
            .value();
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
    if (wins.load() != 1 || destroyed.load() != 1) ++bad;
    EXPECT_TRUE(shared.isCancelled());
    EXPECT_FALSE(shared.isExpired());
  }
  EXPECT_EQ(bad, 0);
}

// Many threads share one set of handles, each cancelling, copying and
// querying them, while the worker expires some and stop() races them all.
// Every task must end exactly once: it ran, exactly one cancel() won it, or
// stop() returned it; its captures are destroyed exactly once.
struct Ledger {
  explicit Ledger(int n) : runs(n), wins(n), destroyed(n) {}
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<int>> wins;
  std::vector<std::atomic<int>> destroyed;
};

void SharedHandlesRound(uint32_t seed, bool use_executor) {
  constexpr int kHandles = 400;
  constexpr int kThreads = 4;
  std::mt19937 rng(seed);
  TimerOptions options = Tick(absl::Milliseconds(1), 64);
  std::atomic<int> executor_runs{0};
  if (use_executor) {
    // Runs the task inline, on the worker: still another path through
    // the node's release.
    options.task_executor = [&](absl::AnyInvocable<void()> run) {
      executor_runs.fetch_add(1);
      run();
    };
  }
  std::unique_ptr<Timer> timer = Timer::Create(std::move(options)).value();
  Ledger ledger(kHandles);
  std::vector<Timeout> handles;  // fixed before the threads start
  handles.reserve(kHandles);
  for (int id = 0; id < kHandles; ++id) {
    const absl::Duration delay =
        rng() % 4 == 0 ? absl::Hours(1) : absl::Microseconds(rng() % 6000);
    handles.push_back(
        timer
            ->newTimeout([&ledger, id, c = Counted(&ledger.destroyed[id])](
                             const Timeout&) { ledger.runs[id].fetch_add(1); },
                         delay)
            .value());
  }
  std::atomic<bool> stopping{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 mine(seed * 31 + t);
      for (int op = 0; op < 3000; ++op) {
        const int id = static_cast<int>(mine() % kHandles);
        const Timeout& h = handles[id];
        switch (mine() % 4) {
          case 0:
          case 1:
            if (h.cancel()) ledger.wins[id].fetch_add(1);
            break;
          case 2: {
            Timeout copy = h;
            (void)copy.isExpired();
            break;
          }
          default:
            (void)h.isCancelled();
        }
        if (op == 1500 && t == 0) stopping.store(true);
      }
    });
  }
  std::vector<Timeout> stopped;
  {
    Timer* raw = timer.get();
    std::thread stopper([&] {
      while (!stopping.load()) std::this_thread::yield();
      stopped = MustReturnWithin(std::chrono::seconds(60), "stop()",
                                 [raw] { return raw->stop().value(); });
    });
    for (auto& th : threads) th.join();
    stopper.join();
  }
  EXPECT_EQ(timer->pendingTimeouts(), 0);
  std::vector<int> in_stop(kHandles, 0);
  for (const Timeout& s : stopped) {
    const auto it = std::find(handles.begin(), handles.end(), s);
    ASSERT_NE(it, handles.end());
    ++in_stop[it - handles.begin()];
    EXPECT_TRUE(s.isCancelled());
    EXPECT_TRUE(s.takeTask() != nullptr);  // destroyed here
  }
  MustReturnWithin(std::chrono::seconds(60), "~Timer", [&] { timer.reset(); });
  int bad = 0;
  for (int id = 0; id < kHandles; ++id) {
    const int ends =
        ledger.runs[id].load() + ledger.wins[id].load() + in_stop[id];
    if (ends != 1 || ledger.destroyed[id].load() != 1) {
      if (++bad <= 10) {
        ADD_FAILURE() << "task " << id << ": ran " << ledger.runs[id].load()
                      << ", cancel() won " << ledger.wins[id].load()
                      << ", stopped " << in_stop[id] << ", destroyed "
                      << ledger.destroyed[id].load();
      }
    }
  }
}

TEST(SharedHandleTest, SharedHandlesRacingExpiryAndStopEndExactlyOnce) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    SharedHandlesRound(seed, seed % 3 == 0);
  }
}

}  // namespace
}  // namespace tickwheel
