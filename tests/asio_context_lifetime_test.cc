// tests/asio_context_lifetime_test.cc
// -----------------------------------------------------------------------------
// AsyncSleep() (timer/asio.h) against the lifetime of the execution context
// its handler completes on. An io_context destroyed with a sleep pending
// destroys the handler uncalled (as Asio does to its own operations) and
// cancels the sleep's timeout; nothing of the context is touched afterwards,
// whether the sleep's task is cancelled, already handed to a task_executor,
// or being delivered as the context goes. An io_context destroyed as soon as
// run() returns is not touched by the hand-over that completed its last
// handler. On a ManualClock first, then racing on the real clock (run under
// ASan and TSan).

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <asio/bind_executor.hpp>
#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include "absl/functional/any_invocable.h"
#include "tests/test_util.h"
#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::PostTo;
using ::tickwheel::testing::QueueExecutor;
using ::tickwheel::testing::Tick;
using ::tickwheel::testing::WaitUntil;

constexpr absl::Duration kTick = absl::Milliseconds(1);

// What became of one handler: called (with which code), and how many of
// its copies that still count are alive.
struct Fate {
  std::atomic<int> calls{0};
  std::atomic<int> alive{0};
  std::optional<std::error_code> ec;
};

// A handler that records its call and counts its live copies.
class Handler {
 public:
  explicit Handler(Fate* fate) : fate_(fate) { ++fate_->alive; }
  Handler(const Handler& other) : fate_(other.fate_) {
    if (fate_ != nullptr) ++fate_->alive;
  }
  Handler(Handler&& other) noexcept
      : fate_(std::exchange(other.fate_, nullptr)) {}
  Handler& operator=(const Handler&) = delete;
  ~Handler() {
    if (fate_ != nullptr) --fate_->alive;
  }
  void operator()(std::error_code ec) {
    fate_->ec = ec;
    ++fate_->calls;
  }

 private:
  Fate* fate_;
};

TEST(AsioContextLifetimeTest, DestroyedWithASleepPendingCancelsItUncalled) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Fate fate;
  {
    asio::io_context io;
    AsyncSleep(*t.timer, absl::Milliseconds(5),
               asio::bind_executor(io, Handler(&fate)));
    EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  }
  EXPECT_EQ(fate.alive.load(), 0);  // destroyed with the context
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(fate.calls.load(), 0);
}

// Through a strand: the strand's context is the io_context.
TEST(AsioContextLifetimeTest, DestroyedWithASleepPendingOnAStrand) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Fate fate;
  {
    asio::io_context io;
    auto strand = asio::make_strand(io);
    AsyncSleep(*t.timer, absl::Milliseconds(5),
               asio::bind_executor(strand, Handler(&fate)));
  }
  EXPECT_EQ(fate.alive.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(10));
  EXPECT_EQ(fate.calls.load(), 0);
}

// The time came and the completion was posted; the context is destroyed
// without running it: the handler goes with it, uncalled.
TEST(AsioContextLifetimeTest, DestroyedWithTheCompletionPosted) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Fate fate;
  {
    asio::io_context io;
    AsyncSleep(*t.timer, absl::Milliseconds(2),
               asio::bind_executor(io, Handler(&fate)));
    t.clock->AdvanceAndSettle(absl::Milliseconds(3));
    EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  }
  EXPECT_EQ(fate.calls.load(), 0);
  EXPECT_EQ(fate.alive.load(), 0);
}

// The worker claimed the sleep and handed its task to the executor, so the
// context's shutdown cannot cancel it: the task, run or dropped after the
// context is gone, touches nothing of it.
TEST(AsioContextLifetimeTest, TaskHandedToTheExecutorOutlivesTheContext) {
  auto executor = std::make_shared<QueueExecutor>();
  TimerOptions options = Tick(kTick);
  options.task_executor = PostTo(executor);
  ManualTimer t = MakeManualTimer(std::move(options));
  Fate run, dropped;
  std::vector<absl::AnyInvocable<void()>> tasks;
  {
    asio::io_context io;
    AsyncSleep(*t.timer, absl::Milliseconds(2),
               asio::bind_executor(io, Handler(&run)));
    AsyncSleep(*t.timer, absl::Milliseconds(2),
               asio::bind_executor(io, Handler(&dropped)));
    t.clock->AdvanceAndSettle(absl::Milliseconds(3));
    tasks = executor->Take();
    ASSERT_EQ(tasks.size(), 2u);
  }
  EXPECT_EQ(run.alive.load() + dropped.alive.load(), 0);
  tasks[0]();     // the time came, for a context that is gone
  tasks.clear();  // the other destroyed unrun
  EXPECT_EQ(run.calls.load() + dropped.calls.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// stop() and ~Timer after the context went: nothing to deliver to.
TEST(AsioContextLifetimeTest, StopAfterTheContextWentTouchesNothing) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Fate fate;
  {
    asio::io_context io;
    AsyncSleep(*t.timer, absl::Hours(1),
               asio::bind_executor(io, Handler(&fate)));
  }
  EXPECT_TRUE(t.timer->stop().value().empty());
  t.timer.reset();
  EXPECT_EQ(fate.calls.load(), 0);
  EXPECT_EQ(fate.alive.load(), 0);
}

// A sleep started on a context that is shutting down (from a handler's
// destructor, say) is destroyed uncalled, and nothing is scheduled.
TEST(AsioContextLifetimeTest, StartedWhileTheContextShutsDown) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  Fate late;
  // A handler whose destruction starts another sleep on the same context.
  struct Restarter {
    Timer* timer;
    asio::io_context* io;
    Fate* late;
    std::shared_ptr<bool> armed = std::make_shared<bool>(true);
    Restarter(Timer* t, asio::io_context* i, Fate* l)
        : timer(t), io(i), late(l) {}
    Restarter(Restarter&&) = default;
    ~Restarter() {
      if (armed != nullptr && armed.use_count() == 1 && *armed) {
        *armed = false;
        AsyncSleep(*timer, absl::Milliseconds(1),
                   asio::bind_executor(*io, Handler(late)));
      }
    }
    void operator()(std::error_code) {}
  };
  {
    asio::io_context io;
    AsyncSleep(*t.timer, absl::Hours(1),
               asio::bind_executor(io, Restarter(t.timer.get(), &io, &late)));
  }
  EXPECT_EQ(late.calls.load(), 0);
  EXPECT_EQ(late.alive.load(), 0);
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

// ---- On the real clock. ----

// run() on a thread returns once the last sleep completed, and the test
// destroys the io_context at once: the hand-over that completed it must be
// over by then (the worker signals the context after it posts).
TEST(AsioContextLifetimeTest, DestroyedAsSoonAsRunReturns) {
  TimerOptions options;
  options.tick_duration = kTick;
  std::unique_ptr<Timer> timer = Timer::Create(std::move(options)).value();
  for (int round = 0; round < 200; ++round) {
    Fate fate;
    {
      asio::io_context io;
      AsyncSleep(*timer, absl::Microseconds(round % 3 * 500),
                 asio::bind_executor(io, Handler(&fate)));
      std::thread runner([&io] { io.run(); });
      runner.join();
    }
    ASSERT_EQ(fate.calls.load(), 1) << "round " << round;
    EXPECT_FALSE(*fate.ec);
    EXPECT_EQ(fate.alive.load(), 0);
  }
  EXPECT_EQ(timer->pendingTimeouts(), 0);
}

// An io_context that never runs is destroyed at a random moment around its
// sleeps' expiry: cancelled, handed over mid-shutdown, or posted before it,
// each handler is destroyed once and never called, and every timeout ends.
TEST(AsioContextLifetimeTest, DestroyedWhileItsSleepsExpire) {
  TimerOptions options;
  options.tick_duration = kTick;
  std::unique_ptr<Timer> timer = Timer::Create(std::move(options)).value();
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<Fate> fates(8);
    {
      asio::io_context io;
      for (Fate& fate : fates) {
        AsyncSleep(*timer, absl::Microseconds(rng() % 2000),
                   asio::bind_executor(io, Handler(&fate)));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
    for (Fate& fate : fates) {
      EXPECT_EQ(fate.calls.load(), 0) << "round " << round;
      EXPECT_EQ(fate.alive.load(), 0) << "round " << round;
    }
  }
  // Every timeout ended: cancelled by a shutdown, or run.
  WaitUntil([&] { return timer->pendingTimeouts() == 0; }, absl::Seconds(60));
  EXPECT_EQ(timer->pendingTimeouts(), 0);
}

}  // namespace
}  // namespace tickwheel
