// tests/asio_local_sleep_test.cc
// -----------------------------------------------------------------------------
// AsyncSleep() and AsyncSleepUntil() on an AsioLocalTimer
// (timer/asio_local_timer.h): a LocalTimer driven by the io_context's own
// thread, on the real clock. The completions come on the handler's
// executor, never early, in deadline order; `||` and cancellation through
// the slot of each type; a sleep due before the planned wake-up re-arms it;
// destroying the driver ends sleeps with shut_down; another thread's sleep
// is refused; run() returns once the last sleep is done, also when it was
// cancelled with a wake-up armed for it. Also AsyncSleepUntil() on a
// Timer. Durations are asserted only as lower bounds (never early).

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include "tests/test_util.h"
#include "tickwheel/timer/asio.h"
#include "tickwheel/timer/asio_local_timer.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

struct Result {
  std::optional<std::error_code> ec;
  std::thread::id thread;
  steady_clock::time_point at;
};

auto Recorder(Result* r) {
  return [r](std::error_code ec) {
    r->ec = ec;
    r->thread = std::this_thread::get_id();
    r->at = steady_clock::now();
  };
}

std::unique_ptr<AsioLocalTimer> MakeWheel(asio::io_context& io) {
  return AsioLocalTimer::Create(io.get_executor()).value();
}

TEST(AsioLocalSleepTest, CompletesOnTheIoThreadNeverEarly) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  Result r;
  const auto start = steady_clock::now();
  AsyncSleep(*wheel, 3ms, Recorder(&r));
  EXPECT_EQ(wheel->timer().pendingTimeouts(), 1);
  EXPECT_FALSE(r.ec.has_value());  // never inside the initiation
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec) << r.ec->message();
  EXPECT_EQ(r.thread, std::this_thread::get_id());
  EXPECT_GE(r.at - start, 3ms);
  EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
  EXPECT_TRUE(wheel->timer().isOwnerThread());
}

TEST(AsioLocalSleepTest, AsyncSleepUntilOnTheWheelsClock) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  Result r;
  const TimePoint deadline = wheel->timer().now() + 4ms;
  AsyncSleepUntil(*wheel, deadline, Recorder(&r));
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec);
  EXPECT_GE(wheel->timer().now(), deadline);
  // A deadline in the past completes promptly, OK.
  Result late;
  io.restart();
  AsyncSleepUntil(*wheel, wheel->timer().now() - 1h, Recorder(&late));
  io.run();
  ASSERT_TRUE(late.ec.has_value());
  EXPECT_FALSE(*late.ec);
}

TEST(AsioLocalSleepTest, CompletionsComeInDeadlineOrder) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  std::vector<int> order;
  const std::vector<int> delays_ms = {7, 2, 5, 1, 9, 3, 3, 8, 4, 6};
  for (size_t i = 0; i < delays_ms.size(); ++i) {
    AsyncSleep(*wheel, std::chrono::milliseconds(delays_ms[i]),
               [&order, &delays_ms, i](std::error_code ec) {
                 EXPECT_FALSE(ec);
                 order.push_back(delays_ms[i]);
               });
  }
  io.run();
  ASSERT_EQ(order.size(), delays_ms.size());
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

// The wake-up is planned for a far sleep first; a near one must re-arm it.
TEST(AsioLocalSleepTest, ASleepDueFirstReArmsTheWakeUp) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  Result far, near;
  asio::cancellation_signal cancel_far;
  AsyncSleep(*wheel, 1h,
             asio::bind_cancellation_slot(cancel_far.slot(), Recorder(&far)));
  const auto start = steady_clock::now();
  AsyncSleep(*wheel, 2ms, [&](std::error_code ec) {
    Recorder (&near)(ec);
    cancel_far.emit(asio::cancellation_type::terminal);
  });
  io.run();
  ASSERT_TRUE(near.ec.has_value());
  EXPECT_FALSE(*near.ec);
  EXPECT_GE(near.at - start, 2ms);
  ASSERT_TRUE(far.ec.has_value());
  EXPECT_EQ(*far.ec, asio::error::operation_aborted);
  EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
}

class AsioLocalSleepCancelTest
    : public ::testing::TestWithParam<asio::cancellation_type_t> {};

TEST_P(AsioLocalSleepCancelTest, CancelsTheTimeoutAtOnceAndAborts) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  asio::cancellation_signal signal;
  Result r;
  asio::post(io, [&] {
    AsyncSleep(*wheel, 1h,
               asio::bind_cancellation_slot(signal.slot(), Recorder(&r)));
    EXPECT_EQ(wheel->timer().pendingTimeouts(), 1);
    signal.emit(GetParam());
    EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
    EXPECT_FALSE(r.ec.has_value());  // posted, never inside emit()
  });
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::operation_aborted);
}

INSTANTIATE_TEST_SUITE_P(EveryType, AsioLocalSleepCancelTest,
                         ::testing::Values(asio::cancellation_type::terminal,
                                           asio::cancellation_type::partial,
                                           asio::cancellation_type::total));

TEST(AsioLocalSleepTest, OrWithAnotherOperation) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  std::optional<size_t> reply_first, sleep_first;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto executor = co_await asio::this_coro::executor;
        // The reply (a post) wins; the sleep is cancelled through `||`.
        auto a = co_await (AsyncSleep(*wheel, 1h, asio::use_awaitable) ||
                           asio::post(executor, asio::use_awaitable));
        reply_first = a.index();
        EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
        // The sleep wins against Asio's own timer.
        asio::steady_timer slow(executor, 1h);
        auto b = co_await (AsyncSleep(*wheel, 1ms, asio::use_awaitable) ||
                           slow.async_wait(asio::use_awaitable));
        sleep_first = b.index();
      },
      asio::detached);
  io.run();
  EXPECT_EQ(reply_first, 1u);
  EXPECT_EQ(sleep_first, 0u);
  EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
}

TEST(AsioLocalSleepTest, DestroyingTheDriverCompletesWithShutDown) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  Result r;
  asio::post(io, [&] {
    AsyncSleep(*wheel, 1h, Recorder(&r));
    wheel.reset();                   // on the owner thread
    EXPECT_FALSE(r.ec.has_value());  // posted, not inside the destructor
  });
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, asio::error::shut_down);
}

TEST(AsioLocalSleepTest, AnotherThreadsSleepIsNotPermitted) {
  asio::io_context io(1);
  LocalTimerOptions options;
  options.owner = std::this_thread::get_id();
  auto wheel = AsioLocalTimer::Create(io.get_executor(), options).value();
  Result r;
  std::thread([&] { AsyncSleep(*wheel, 1ms, Recorder(&r)); }).join();
  EXPECT_EQ(wheel->timer().pendingTimeouts(), 0);
  io.run();  // delivered on the handler's executor
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_EQ(*r.ec, std::make_error_code(std::errc::operation_not_permitted));
  EXPECT_EQ(r.thread, std::this_thread::get_id());
}

TEST(AsioLocalSleepTest, TimeoutsScheduledThroughTheDriverRunOnTheIoThread) {
  asio::io_context io(1);
  auto wheel = MakeWheel(io);
  std::thread::id ran_on;
  const auto start = steady_clock::now();
  steady_clock::time_point ran_at;
  ASSERT_TRUE(wheel
                  ->newTimeout(
                      [&] {
                        ran_on = std::this_thread::get_id();
                        ran_at = steady_clock::now();
                      },
                      2ms)
                  .ok());
  // The wheel's pending timeout is not Asio work: keep the context running
  // until it ran.
  auto guard = asio::make_work_guard(io);
  asio::steady_timer stop(io, 50ms);
  stop.async_wait([&](std::error_code) { guard.reset(); });
  io.run();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_GE(ran_at - start, 2ms);
}

TEST(AsioSleepUntilTest, OnATimerAtAReadingOfItsClock) {
  testing::ManualTimer t =
      testing::MakeManualTimer(testing::Tick(absl::Milliseconds(1)));
  asio::io_context io;
  Result r;
  const TimePoint deadline = t.timer->now() + 5ms;
  AsyncSleepUntil(*t.timer, deadline, asio::bind_executor(io, Recorder(&r)));
  t.clock->AdvanceAndSettle(absl::Milliseconds(4));
  io.poll();
  EXPECT_FALSE(r.ec.has_value());
  t.clock->AdvanceAndSettle(absl::Milliseconds(2));
  io.run();
  ASSERT_TRUE(r.ec.has_value());
  EXPECT_FALSE(*r.ec);
  EXPECT_GE(t.timer->now(), deadline);
}

}  // namespace
}  // namespace tickwheel
