// tests/asio_sleep_test.cc
// -----------------------------------------------------------------------------
// AsyncSleep() (timer/asio.h) on a ManualClock, with standalone Asio: a
// callback, use_awaitable, use_future and `||`; cancellation through the
// handler's slot of each type; shut_down when the timer stops; the
// handler's associated executor and allocator; the work guard; the errors
// of a sleep that cannot be scheduled. io_context::run() and poll() run on
// the test thread, after AwaitIdle(): what the worker posted is there.

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <variant>

#include <gtest/gtest.h>
#include <asio/bind_allocator.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include "tests/test_util.h"
#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;

constexpr absl::Duration kTick = absl::Milliseconds(1);

// Records the error code a handler got.
struct Result {
  std::optional<std::error_code> ec;
  std::thread::id thread;
};

auto Recorder(Result* r) {
  return [r](std::error_code ec) {
    r->ec = ec;
    r->thread = std::this_thread::get_id();
  };
}

TEST(AsioSleepTest, CallbackCompletesOnItsExecutorWhenTheTimeComes) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  Result r;
  AsyncSleep(*t.timer, absl::Milliseconds(5),
             asio::bind_executor(io, Recorder(&r)));
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  io.poll();
  EXPECT_FALSE(r.ec.has_value());
  EXPECT_FALSE(io.stopped());  // the work guard keeps it from running out
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  EXPECT_FALSE(r.ec.has_value());  // posted to io, not run by the worker
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec) << r.ec->message();
  EXPECT_EQ(r.thread, std::this_thread::get_id());
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
}

TEST(AsioSleepTest, HandlerWithoutExecutorRunsWhereTasksRun) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  auto worker = std::make_shared<std::thread::id>();
  ASSERT_TRUE(
      t.timer
          ->newTimeout([worker] { *worker = std::this_thread::get_id(); },
                       absl::Milliseconds(2))
          .ok());
  Result r;
  AsyncSleep(*t.timer, std::chrono::milliseconds(2), Recorder(&r));
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec);
  EXPECT_EQ(r.thread, *worker);
}

TEST(AsioSleepTest, UseAwaitable) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await AsyncSleep(*t.timer, std::chrono::milliseconds(5),
                            asio::use_awaitable);
        done = true;
      },
      asio::detached);
  io.poll();  // the coroutine starts and suspends in the sleep
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(6));
  io.run();
  EXPECT_TRUE(done);
}

TEST(AsioSleepTest, UseFuture) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  std::future<void> timed =
      AsyncSleep(*t.timer, absl::Milliseconds(5), asio::use_future);
  std::future<void> stopped =
      AsyncSleep(*t.timer, absl::Hours(1), asio::use_future);
  EXPECT_EQ(timed.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);
  t.clock->AdvanceAndSettle(absl::Milliseconds(6));
  ASSERT_EQ(timed.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_NO_THROW(timed.get());
  ASSERT_TRUE(t.timer->stop().ok());
  try {
    stopped.get();
    ADD_FAILURE() << "a stopped sleep completed without an error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::shut_down);
  }
}

TEST(AsioSleepTest, OrWithAnotherOperationThatWins) {
  using namespace asio::experimental::awaitable_operators;
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  asio::steady_timer other(io, std::chrono::steady_clock::duration::zero());
  std::optional<size_t> winner;
  int64_t pending_after = -1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::variant<std::monostate, std::monostate> r = co_await (
            AsyncSleep(*t.timer, absl::Hours(1), asio::use_awaitable) ||
            other.async_wait(asio::use_awaitable));
        winner = r.index();
        pending_after = t.timer->pendingTimeouts();
      },
      asio::detached);
  io.run();
  EXPECT_EQ(winner, 1u);
  EXPECT_EQ(pending_after, 0);
}

TEST(AsioSleepTest, OrWithAnotherOperationThatLoses) {
  using namespace asio::experimental::awaitable_operators;
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  asio::steady_timer other(io, std::chrono::hours(1));
  std::optional<size_t> winner;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto r = co_await (
            AsyncSleep(*t.timer, absl::Milliseconds(5), asio::use_awaitable) ||
            other.async_wait(asio::use_awaitable));
        winner = r.index();
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(6));
  io.run();  // returns once `other` is cancelled too
  EXPECT_EQ(winner, 0u);
}

class AsioSleepCancelTest
    : public ::testing::TestWithParam<asio::cancellation_type_t> {};

TEST_P(AsioSleepCancelTest, CancelsTheTimeoutAtOnceAndAborts) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  asio::cancellation_signal signal;
  Result r;
  AsyncSleep(*t.timer, absl::Hours(1),
             asio::bind_cancellation_slot(
                 signal.slot(), asio::bind_executor(io, Recorder(&r))));
  int64_t pending_after_emit = -1;
  bool completed_inside_emit = true;
  asio::post(io, [&] {
    signal.emit(GetParam());
    pending_after_emit = t.timer->pendingTimeouts();
    completed_inside_emit = r.ec.has_value();
  });
  io.run();
  EXPECT_EQ(pending_after_emit, 0);
  EXPECT_FALSE(completed_inside_emit);
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::operation_aborted);
}

INSTANTIATE_TEST_SUITE_P(EachType, AsioSleepCancelTest,
                         ::testing::Values(asio::cancellation_type::terminal,
                                           asio::cancellation_type::partial,
                                           asio::cancellation_type::total));

TEST(AsioSleepTest, EmitOfNoTypeIsIgnored) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  asio::cancellation_signal signal;
  Result r;
  AsyncSleep(*t.timer, absl::Milliseconds(5),
             asio::bind_cancellation_slot(
                 signal.slot(), asio::bind_executor(io, Recorder(&r))));
  asio::post(io, [&] { signal.emit(asio::cancellation_type::none); });
  io.poll();
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(6));
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec);
}

TEST(AsioSleepTest, StopCompletesWithShutDown) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  Result r;
  AsyncSleep(*t.timer, absl::Hours(1), asio::bind_executor(io, Recorder(&r)));
  t.clock->AdvanceAndSettle(kTick);
  absl::StatusOr<std::vector<Timeout>> left = t.timer->stop();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());  // not the application's
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::shut_down);
}

TEST(AsioSleepTest, DestroyingTheTimerCompletesWithShutDown) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  Result r;
  AsyncSleep(*t.timer, absl::Hours(1), asio::bind_executor(io, Recorder(&r)));
  t.timer.reset();
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::shut_down);
}

TEST(AsioSleepTest, StoppedTimerCompletesWithShutDownThroughTheExecutor) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  ASSERT_TRUE(t.timer->stop().ok());
  asio::io_context io;
  Result r;
  AsyncSleep(*t.timer, absl::Milliseconds(1),
             asio::bind_executor(io, Recorder(&r)));
  EXPECT_FALSE(r.ec.has_value());  // never inside AsyncSleep()
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::shut_down);
}

TEST(AsioSleepTest, SchedulingErrors) {
  TimerOptions options = Tick(kTick);
  options.max_pending_timeouts = 1;
  ManualTimer t = MakeManualTimer(options);
  ASSERT_TRUE(t.timer->newTimeout([] {}, absl::Seconds(1)).ok());
  asio::io_context io;
  Result full, nan;
  AsyncSleep(*t.timer, absl::Milliseconds(1),
             asio::bind_executor(io, Recorder(&full)));
  AsyncSleep(*t.timer, std::chrono::duration<double>(std::nan("")),
             asio::bind_executor(io, Recorder(&nan)));
  io.run();
  ASSERT_TRUE(full.ec.has_value() && nan.ec.has_value());
  EXPECT_EQ(*full.ec, asio::error::try_again);
  EXPECT_EQ(*nan.ec, asio::error::invalid_argument);
}

TEST(AsioSleepTest, CancelAllPassesItBy) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  Result r;
  AsyncSleep(*t.timer, absl::Milliseconds(3),
             asio::bind_executor(io, Recorder(&r)));
  EXPECT_EQ(t.timer->cancelAll(), 0);
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec);
}

TEST(AsioSleepTest, HandlerRunsOnItsStrand) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  auto strand = asio::make_strand(io);
  bool on_strand = false;
  AsyncSleep(*t.timer, absl::Milliseconds(2),
             asio::bind_executor(strand, [&](std::error_code) {
               on_strand = strand.running_in_this_thread();
             }));
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  io.run();
  EXPECT_TRUE(on_strand);
}

// Counts the blocks it has out.
template <typename T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(std::atomic<int>* out) : out(out) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) : out(other.out) {}
  T* allocate(size_t n) {
    out->fetch_add(1);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    out->fetch_sub(1);
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const CountingAllocator& a,
                         const CountingAllocator& b) {
    return a.out == b.out;
  }
  std::atomic<int>* out;
};

TEST(AsioSleepTest, StateComesFromTheHandlersAllocatorAndGoesBeforeTheCall) {
  ManualTimer t = MakeManualTimer(Tick(kTick));
  asio::io_context io;
  std::atomic<int> out{0};
  int out_during_call = -1;
  AsyncSleep(*t.timer, absl::Milliseconds(2),
             asio::bind_executor(
                 io, asio::bind_allocator(CountingAllocator<int>(&out),
                                          [&](std::error_code) {
                                            out_during_call = out.load();
                                          })));
  EXPECT_EQ(out.load(), 1);
  t.clock->AdvanceAndSettle(absl::Milliseconds(3));
  io.run();
  EXPECT_EQ(out_during_call, 0);
  EXPECT_EQ(out.load(), 0);
}

}  // namespace
}  // namespace tickwheel
