// tests/coro_sleep_destroy_test.cc
// -----------------------------------------------------------------------------
// A coroutine destroyed while it is suspended in a sleep (timer/coro.h), as
// a task group or a cancelled asio::co_spawn parent cancels it: the sleep's
// timeout is cancelled then, exactly once (pendingTimeouts() drops at once),
// and nothing resumes the frame afterwards: not the expiry, not a stop
// request, not stop() or the timer's destructor, and not a task the expiry
// already handed to a task_executor. On a LocalTimer and a Timer, on a
// ManualClock; then destruction racing expiry on the real clock, with the
// coroutines destroyed and resumed on one loop thread (the task_executor),
// as the contract asks. Run under ASan (a resumed freed frame, a leaked
// state block) and TSan.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "tests/coro_test_util.h"
#include "tests/local_timer_test_util.h"
#include "tests/test_util.h"
#include "tickwheel/timer/coro.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::kMs;
using ::tickwheel::testing::LocalOptions;
using ::tickwheel::testing::MakeLocalTimer;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualLocalTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Outcome;
using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::QueueExecutor;
using ::tickwheel::testing::Tick;

// A coroutine the test owns: it starts at once, and its frame stays (also
// once it has finished) until the test destroys it.
struct Owned {
  struct promise_type {
    Owned get_return_object() {
      return Owned{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

// Counts the frames alive: one local of each frame.
class FrameGuard {
 public:
  explicit FrameGuard(std::atomic<int>* alive) : alive_(alive) { ++*alive_; }
  FrameGuard(const FrameGuard&) = delete;
  FrameGuard& operator=(const FrameGuard&) = delete;
  ~FrameGuard() { --*alive_; }

 private:
  std::atomic<int>* alive_;
};

// Awaits `sleep` and records how it ended, in a frame the test destroys.
Owned SleepOnce(Awaitable sleep, Outcome* out, std::atomic<int>* frames) {
  FrameGuard guard(frames);
  absl::Status s = co_await std::move(sleep);
  out->Record(std::move(s));
}

// ---- On a LocalTimer: everything on the owner thread. ----

TEST(CoroSleepDestroyTest, LocalTimerDestroyedWhileSuspendedCancelsTheSleep) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> frames{0};
  Outcome out;
  Owned c = SleepOnce(SleepFor(*t.timer, absl::Milliseconds(5)), &out, &frames);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  c.handle.destroy();
  EXPECT_EQ(frames.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.timer->pollTimeoutMs(), -1);
  EXPECT_EQ(t.timer->metrics().cancelled, 1);
  EXPECT_EQ(t.AdvanceTo(10 * kMs), 0);
  EXPECT_EQ(out.resumes.load(), 0);
}

// stop() and the destructor end the sleeps still suspended, and pass by the
// one whose coroutine is gone.
TEST(CoroSleepDestroyTest, LocalTimerStopAndDestructorResumeNoDestroyedFrame) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> frames{0};
  Outcome gone, kept, gone_too;
  Owned a = SleepOnce(SleepFor(*t.timer, absl::Seconds(1)), &gone, &frames);
  Owned b = SleepOnce(SleepFor(*t.timer, absl::Seconds(1)), &kept, &frames);
  a.handle.destroy();
  EXPECT_TRUE(t.timer->stop().empty());
  EXPECT_EQ(gone.resumes.load(), 0);
  ASSERT_EQ(kept.resumes.load(), 1);
  EXPECT_EQ(kept.Status().code(), absl::StatusCode::kFailedPrecondition);
  b.handle.destroy();

  ManualLocalTimer u = MakeLocalTimer(LocalOptions());
  Owned d = SleepOnce(SleepFor(*u.timer, absl::Seconds(1)), &gone_too, &frames);
  d.handle.destroy();
  u.timer.reset();
  EXPECT_EQ(gone_too.resumes.load(), 0);
  EXPECT_EQ(frames.load(), 0);
}

// A task due in the same advance(), before the sleep, destroys the
// coroutine: the sleep's timeout is cancelled inside the walk and its
// expiry never comes.
TEST(CoroSleepDestroyTest, LocalTimerDestroyedByATaskOfTheAdvanceThatEndsIt) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> frames{0};
  Outcome out;
  Owned c;
  t.timer->newTimeout([&] { c.handle.destroy(); }, absl::Milliseconds(1))
      .value();
  c = SleepOnce(SleepFor(*t.timer, absl::Milliseconds(1)), &out, &frames);
  EXPECT_EQ(t.AdvanceTo(1 * kMs), 1);  // the task; the sleep did not run
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(frames.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.AdvanceTo(5 * kMs), 0);
}

// A stop request moved the sleep to now; the coroutine is destroyed before
// the advance() that would resume it Cancelled.
TEST(CoroSleepDestroyTest, LocalTimerDestroyedAfterAStopRequest) {
  ManualLocalTimer t = MakeLocalTimer(LocalOptions());
  std::atomic<int> frames{0};
  std::stop_source stop;
  Outcome out;
  Owned c = SleepOnce(SleepFor(*t.timer, absl::Seconds(1), stop.get_token()),
                      &out, &frames);
  stop.request_stop();
  c.handle.destroy();
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  EXPECT_EQ(t.AdvanceTo(2 * kMs), 0);
  EXPECT_EQ(out.resumes.load(), 0);
}

// ---- On a Timer. ----

TEST(CoroSleepDestroyTest, TimerDestroyedWhileSuspendedCancelsTheSleep) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::atomic<int> frames{0};
  Outcome out, kept;
  Owned c = SleepOnce(SleepFor(*t.timer, absl::Milliseconds(5)), &out, &frames);
  Owned k = SleepOnce(SleepFor(*t.timer, absl::Seconds(5)), &kept, &frames);
  t.clock->AwaitIdle();
  EXPECT_EQ(t.timer->pendingTimeouts(), 2);
  c.handle.destroy();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(out.resumes.load(), 0);
  // stop() ends the other sleep, and not the destroyed one.
  EXPECT_TRUE(t.timer->stop().value().empty());
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(kept.resumes.load(), 1);
  k.handle.destroy();
  EXPECT_EQ(frames.load(), 0);
}

// Destroyed, then ~Timer: the destructor ends nothing that is gone.
TEST(CoroSleepDestroyTest, TimerDestructorResumesNoDestroyedFrame) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::atomic<int> frames{0};
  Outcome out;
  Owned c = SleepOnce(SleepFor(*t.timer, absl::Seconds(5)), &out, &frames);
  c.handle.destroy();
  t.timer.reset();
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(frames.load(), 0);
}

// A task due in the same tick, before the sleep, destroys the coroutine on
// the worker: whether the worker had claimed the sleep yet or not, it is
// never resumed.
TEST(CoroSleepDestroyTest, TimerDestroyedByATaskOfTheSameTick) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::atomic<int> frames{0};
  Outcome out;
  Owned c;
  t.timer->newTimeout([&] { c.handle.destroy(); }, absl::Milliseconds(1))
      .value();
  c = SleepOnce(SleepFor(*t.timer, absl::Milliseconds(1)), &out, &frames);
  t.clock->AwaitIdle();
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  EXPECT_EQ(out.resumes.load(), 0);
  EXPECT_EQ(frames.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// The expiry won (the worker handed the sleep's task to the executor, so
// the destructor's cancel() fails): the task, run or dropped later, finds
// the sleep abandoned and resumes nothing.
TEST(CoroSleepDestroyTest, TimerExpiryHandedToTheExecutorResumesNothing) {
  auto executor = std::make_shared<QueueExecutor>();
  TimerOptions options = Tick(absl::Milliseconds(1));
  options.task_executor = PostTo(executor);
  ManualTimer t = MakeManualTimer(std::move(options));
  std::atomic<int> frames{0};
  Outcome run, dropped;
  Owned a = SleepOnce(SleepFor(*t.timer, absl::Milliseconds(2)), &run, &frames);
  t.clock->AwaitIdle();
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  std::vector<absl::AnyInvocable<void()>> first = executor->Take();
  ASSERT_EQ(first.size(), 1u);
  Owned b =
      SleepOnce(SleepFor(*t.timer, absl::Milliseconds(2)), &dropped, &frames);
  t.clock->AwaitIdle();
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  std::vector<absl::AnyInvocable<void()>> second = executor->Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  a.handle.destroy();
  b.handle.destroy();
  EXPECT_EQ(frames.load(), 0);
  first[0]();      // runs the task: the time came, for a frame that is gone
  second.clear();  // destroys the task unrun
  EXPECT_EQ(run.resumes.load(), 0);
  EXPECT_EQ(dropped.resumes.load(), 0);
}

// ---- Destruction racing expiry, on the real clock. ----

// One thread that runs what is posted to it, in order: the timer's
// task_executor, and where the test creates and destroys its coroutines,
// so that a destruction never races the resumption of the same frame.
class Loop {
 public:
  Loop() : thread_([this] { Run(); }) {}
  ~Loop() {
    Post(nullptr);
    thread_.join();
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void Post(absl::AnyInvocable<void()> f) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(f));
    cv_.notify_one();
  }
  // Runs `f` on the loop, after what was posted before, and waits for it.
  void RunAndWait(absl::AnyInvocable<void()> f) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Post([&] {
      f();
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }

 private:
  void Run() {
    for (;;) {
      absl::AnyInvocable<void()> f;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        f = std::move(queue_.front());
        queue_.pop_front();
      }
      if (f == nullptr) return;
      f();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> queue_;
  std::thread thread_;
};

// Coroutines sleep 0-4 ms on a 1 ms tick; the test thread destroys each at
// a random moment (some with a stop request first, from the test thread),
// racing the worker's claim of its sleep. Each is resumed at most once,
// none after its destruction, every timeout ends, and no state block
// leaks (LeakSanitizer).
TEST(CoroSleepDestroyTest, DestroyRacingExpiryEndsEachSleepOnce) {
  constexpr int kCoroutines = 2000;
  Loop loop;
  TimerOptions options;
  options.tick_duration = absl::Milliseconds(1);
  options.task_executor = [&loop](absl::AnyInvocable<void()> f) {
    loop.Post(std::move(f));
  };
  std::unique_ptr<Timer> timer = Timer::Create(std::move(options)).value();
  std::atomic<int> frames{0};
  std::vector<Outcome> outs(kCoroutines);
  std::vector<Owned> coroutines(kCoroutines);
  std::vector<std::stop_source> stops(kCoroutines);
  std::mt19937 rng(7);
  std::vector<int> delays_us(kCoroutines);
  for (int& d : delays_us) d = static_cast<int>(rng() % 4000);
  loop.RunAndWait([&] {
    for (int i = 0; i < kCoroutines; ++i) {
      coroutines[i] =
          SleepOnce(SleepFor(*timer, absl::Microseconds(delays_us[i]),
                             stops[i].get_token()),
                    &outs[i], &frames);
    }
  });
  for (int i = 0; i < kCoroutines; ++i) {
    if (rng() % 4 == 0) stops[i].request_stop();
    loop.Post([&, i] { coroutines[i].handle.destroy(); });
    if (rng() % 8 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    }
  }
  loop.RunAndWait([] {});
  // Every frame is gone; nothing suspended is left for stop() to end.
  EXPECT_EQ(frames.load(), 0);
  EXPECT_TRUE(timer->stop().value().empty());
  loop.RunAndWait([] {});  // tasks the worker handed over before it stopped
  int resumed = 0;
  for (Outcome& out : outs) {
    const int r = out.resumes.load(std::memory_order_acquire);
    EXPECT_LE(r, 1);
    resumed += r;
  }
  EXPECT_EQ(timer->pendingTimeouts(), 0);
  RecordProperty("resumed_before_destruction", resumed);
}

}  // namespace
}  // namespace tickwheel
