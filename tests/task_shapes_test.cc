// tests/task_shapes_test.cc
// -----------------------------------------------------------------------------
// What a task may be: a callable taking its Timeout, or nothing; what it may
// not be (checked at compile time by TimerTaskCallable); the handle a task is
// lent, which it may keep; and handles as keys of unordered containers.

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;

// The accepted shapes, and some refused ones.
static_assert(TimerTaskCallable<void (*)(const Timeout&)>);
static_assert(TimerTaskCallable<void (*)()>);
static_assert(TimerTaskCallable<std::function<void()>>);
static_assert(TimerTaskCallable<TimerTask>);
static_assert(TimerTaskCallable<int (*)()>);  // the result is ignored
static_assert(!TimerTaskCallable<int>);
static_assert(!TimerTaskCallable<void (*)(int)>);
static_assert(!TimerTaskCallable<std::function<void(std::string)>>);

std::atomic<int> plain_runs{0};
void Plain() { ++plain_runs; }

TEST(TaskShapesTest, NullaryTasksRun) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  int lambda_runs = 0;
  t.timer->newTimeout([&] { ++lambda_runs; }, absl::Milliseconds(1)).value();
  t.timer->newTimeout(Plain, absl::Milliseconds(1)).value();
  t.timer->newTimeout(&Plain, absl::Milliseconds(1)).value();
  std::function<void()> fn = [&] { ++lambda_runs; };
  t.timer->newTimeout(fn, absl::Milliseconds(1)).value();
  // A large nullary callable goes into a box; it runs all the same.
  std::array<char, 100> big{};
  t.timer
      ->newTimeout([&lambda_runs, big] { lambda_runs += big[0] + 1; },
                   absl::Milliseconds(1))
      .value();
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(lambda_runs, 3);
  EXPECT_EQ(plain_runs.load(), 2);
}

TEST(TaskShapesTest, EmptyNullaryCallablesAreRefused) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  void (*null_fn)() = nullptr;
  EXPECT_EQ(t.timer->newTimeout(null_fn, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer->newTimeout(std::function<void()>(), absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.timer
                ->newPeriodic(std::function<void()>(), absl::Seconds(1),
                              absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TaskShapesTest, TakeTaskOfANullaryTaskRunsIt) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  int runs = 0;
  Timeout small = t.timer->newTimeout([&] { ++runs; }, absl::Hours(1)).value();
  std::array<char, 64> pad{};
  Timeout large =
      t.timer->newTimeout([&runs, pad] { runs += 1 + pad[0]; }, absl::Hours(1))
          .value();
  ASSERT_EQ(t.timer->stop().value().size(), 2u);
  TimerTask a = small.takeTask();
  TimerTask b = large.takeTask();
  ASSERT_TRUE(a && b);
  a(small);
  b(large);
  EXPECT_EQ(runs, 2);
}

// A task is lent its Timeout for the call (no reference of its own). A copy
// it keeps is a handle like any other: it outlives the run and the timer's
// own reference, and reads the timeout as expired; the task's captures still
// go when the run ends, not with that handle. Inline and boxed callables.
TEST(TaskShapesTest, ATaskMayKeepACopyOfTheHandleItIsLent) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  auto captured = std::make_shared<int>(0);
  Timeout kept_inline;
  Timeout kept_boxed;
  std::array<char, 100> big{};
  t.timer
      ->newTimeout(
          [&kept_inline, captured](const Timeout& self) { kept_inline = self; },
          absl::Milliseconds(1))
      .value();
  t.timer
      ->newTimeout([&kept_boxed, captured,
                    big](const Timeout& self) { kept_boxed = self; },
                   absl::Milliseconds(1))
      .value();
  EXPECT_EQ(captured.use_count(), 3);
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  ASSERT_TRUE(kept_inline);
  ASSERT_TRUE(kept_boxed);
  EXPECT_TRUE(kept_inline.isExpired());
  EXPECT_TRUE(kept_boxed.isExpired());
  EXPECT_FALSE(kept_inline.cancel());
  EXPECT_FALSE(kept_inline == kept_boxed);
  EXPECT_EQ(captured.use_count(), 1);  // both captures went with their runs
  EXPECT_EQ(t.timer->pendingTimeouts(), 0);
  Timeout copy = kept_inline;  // still a live handle: copies and compares
  EXPECT_TRUE(copy == kept_inline);
}

TEST(TaskShapesTest, HandlesKeyUnorderedContainers) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  std::unordered_set<Timeout> set;
  std::unordered_map<Timeout, int> map;
  Timeout a = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  Timeout b = t.timer->newTimeout([] {}, absl::Seconds(1)).value();
  set.insert(a);
  set.insert(Timeout(a));  // a copy is the same key
  set.insert(b);
  map[a] = 1;
  map[b] = 2;
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(map.at(Timeout(b)), 2);
  EXPECT_EQ(std::hash<Timeout>()(a), std::hash<Timeout>()(Timeout(a)));
  EXPECT_TRUE(set.count(Timeout()) == 0);
}

}  // namespace
}  // namespace tickwheel
