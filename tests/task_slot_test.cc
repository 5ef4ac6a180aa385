// Tests for base/task_slot.h: what is stored inline and what is boxed, that
// each callable is destroyed exactly once whichever way the slot is emptied,
// and that Timer::newTimeout() takes a callable straight into its node.

#include "tickwheel/base/task_slot.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::internal {
namespace {

using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;
using ::tickwheel::testing::Tick;

// Counts live instances and calls; copy and move make new instances.
struct Counts {
  int live = 0;
  int calls = 0;
};

template <size_t kPad, size_t kAlign = alignof(void*)>
struct alignas(kAlign) Counted {
  explicit Counted(Counts* c) : counts(c) { ++counts->live; }
  Counted(const Counted& o) : counts(o.counts) { ++counts->live; }
  Counted(Counted&& o) noexcept : counts(o.counts) { ++counts->live; }
  ~Counted() { --counts->live; }
  void operator()(const Timeout&) { ++counts->calls; }
  Counts* counts;
  std::array<unsigned char, kPad> pad{};
};

using Small = Counted<8>;            // 16 bytes: inline
using Large = Counted<64>;           // boxed
using OverAligned = Counted<0, 16>;  // 16-aligned: boxed
static_assert(kFitsInline<Small>);
static_assert(!kFitsInline<Large>);
static_assert(!kFitsInline<OverAligned>);

// A null Timeout is enough to call a task that ignores it.
const Timeout& NoTimeout() {
  static const Timeout* t = new Timeout();
  return *t;
}

template <typename T>
class TaskSlotTypedTest : public ::testing::Test {};
using Callables = ::testing::Types<Small, Large, OverAligned>;
TYPED_TEST_SUITE(TaskSlotTypedTest, Callables);

TYPED_TEST(TaskSlotTypedTest, RunsAndResetDestroysOnce) {
  Counts c;
  {
    TaskSlot slot;
    EXPECT_FALSE(slot);
    EmplaceInto(slot, TypeParam(&c));
    ASSERT_TRUE(slot);
    EXPECT_EQ(c.live, 1);
    slot.Invoke(Timeout());
    slot.Invoke(Timeout());
    EXPECT_EQ(c.calls, 2);
    slot.Reset();
    EXPECT_FALSE(slot);
    EXPECT_EQ(c.live, 0);
    slot.Reset();  // empty: nothing to do
  }
  EXPECT_EQ(c.live, 0);
}

TYPED_TEST(TaskSlotTypedTest, DestructorDestroysOnce) {
  Counts c;
  {
    TaskSlot slot;
    EmplaceInto(slot, TypeParam(&c));
  }
  EXPECT_EQ(c.live, 0);
}

TYPED_TEST(TaskSlotTypedTest, TakeMovesOutAndLeavesEmpty) {
  Counts c;
  TaskSlot slot;
  EmplaceInto(slot, TypeParam(&c));
  TimerTask task = TakeTask(slot);
  EXPECT_FALSE(slot);
  ASSERT_TRUE(task);
  EXPECT_EQ(c.live, 1) << "the slot's copy was destroyed after the move";
  task(NoTimeout());
  EXPECT_EQ(c.calls, 1);
  task = nullptr;
  EXPECT_EQ(c.live, 0);
  EXPECT_FALSE(TakeTask(slot));
}

TEST(TaskSlotTest, TimerTaskIsBoxedAndComesBackWhole) {
  Counts c;
  TaskSlot slot;
  EmplaceInto(slot, TimerTask(Small(&c)));
  ASSERT_TRUE(slot);
  slot.Invoke(Timeout());
  TimerTask back = TakeTask(slot);
  back(NoTimeout());
  EXPECT_EQ(c.calls, 2);
  back = nullptr;
  EXPECT_EQ(c.live, 0);
}

TEST(TaskSlotTest, NullCallablesLeaveTheSlotEmpty) {
  TaskSlot slot;
  EmplaceInto(slot, TimerTask());
  EXPECT_FALSE(slot);
  EmplaceInto(slot, std::function<void(const Timeout&)>());
  EXPECT_FALSE(slot);
  void (*null_fn)(const Timeout&) = nullptr;
  EmplaceInto(slot, null_fn);
  EXPECT_FALSE(slot);
  EXPECT_FALSE(IsEmptyCallable([](const Timeout&) {}));
}

struct ThrowingCopy {
  explicit ThrowingCopy(Counts* c) : counts(c) { ++counts->live; }
  ThrowingCopy(const ThrowingCopy& o) : counts(o.counts) {
    throw std::runtime_error("copy failed");
  }
  ~ThrowingCopy() { --counts->live; }
  void operator()(const Timeout&) {}
  Counts* counts;
};

TEST(TaskSlotTest, ThrowingCopyLeavesTheSlotEmpty) {
  Counts c;
  ThrowingCopy original(&c);
  TaskSlot slot;
  EXPECT_THROW(EmplaceInto(slot, original), std::runtime_error);
  EXPECT_FALSE(slot);
  EXPECT_EQ(c.live, 1);
}

// A callable whose move constructor may throw (it is not noexcept) and does
// when `*moves_throw` is set, as a move that allocates can.
template <size_t kPad>
struct ThrowingMove {
  ThrowingMove(Counts* c, const bool* t) : counts(c), moves_throw(t) {
    ++counts->live;
  }
  ThrowingMove(ThrowingMove&& o)
      : counts(o.counts), moves_throw(o.moves_throw) {
    if (*moves_throw) throw std::runtime_error("move failed");
    ++counts->live;
  }
  ~ThrowingMove() { --counts->live; }
  void operator()(const Timeout&) { ++counts->calls; }
  Counts* counts;
  const bool* moves_throw;
  struct NoPad {};
  [[no_unique_address]] std::conditional_t<
      kPad == 0, NoPad, std::array<unsigned char, kPad == 0 ? 1 : kPad>>
      pad{};
};
// Small enough to sit inline, were its move noexcept: it is boxed instead.
static_assert(sizeof(ThrowingMove<0>) <= TaskSlot::kInlineBytes);
static_assert(!kFitsInline<ThrowingMove<0>>);

template <typename T>
class ThrowingMoveTest : public ::testing::Test {};
using ThrowingMoves = ::testing::Types<ThrowingMove<0>, ThrowingMove<64>>;
TYPED_TEST_SUITE(ThrowingMoveTest, ThrowingMoves);

// Take() never moves such a callable, so it cannot throw and lose it.
TYPED_TEST(ThrowingMoveTest, TakeNeverMovesACallableWhoseMoveThrows) {
  static_assert(noexcept(TakeTask(std::declval<TaskSlot&>())));
  Counts c;
  bool moves_throw = false;
  TaskSlot slot;
  EmplaceInto(slot, TypeParam(&c, &moves_throw));
  moves_throw = true;
  TimerTask task = TakeTask(slot);
  ASSERT_TRUE(task);
  EXPECT_FALSE(slot);
  EXPECT_EQ(c.live, 1);
  task(NoTimeout());
  EXPECT_EQ(c.calls, 1);
  task = nullptr;
  EXPECT_EQ(c.live, 0);
}

// The same through the public API: stop() returns the timeout, and
// takeTask() hands its task out whole, with no exception.
TEST(TaskSlotTimerTest, TakeTaskHandsOutATaskWhoseMoveThrows) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  Counts c;
  bool moves_throw = false;
  Timeout timeout =
      t.timer->newTimeout(ThrowingMove<0>(&c, &moves_throw), absl::Hours(1))
          .value();
  std::vector<Timeout> left = t.timer->stop().value();
  ASSERT_EQ(left.size(), 1u);
  moves_throw = true;
  TimerTask task = left[0].takeTask();
  ASSERT_TRUE(task);
  EXPECT_FALSE(timeout.takeTask());
  task(timeout);
  EXPECT_EQ(c.calls, 1);
  task = nullptr;
  EXPECT_EQ(c.live, 0);
}

// A callable whose destructor looks at the slot it lives in.
struct ChecksSlotOnDestroy {
  TaskSlot* slot;
  bool* slot_was_empty;
  ~ChecksSlotOnDestroy() {
    if (slot != nullptr) *slot_was_empty = !*slot;
  }
  void operator()(const Timeout&) {}
};

TEST(TaskSlotTest, SlotIsEmptyWhileTheCallableIsDestroyed) {
  TaskSlot slot;
  bool was_empty = false;
  EmplaceInto(slot, ChecksSlotOnDestroy{&slot, &was_empty});
  slot.Reset();
  EXPECT_TRUE(was_empty);
}

TEST(TaskSlotTest, ExceptionFromTheCallPropagates) {
  TaskSlot slot;
  EmplaceInto(slot, [](const Timeout&) { throw std::runtime_error("task"); });
  EXPECT_THROW(slot.Invoke(Timeout()), std::runtime_error);
  EXPECT_TRUE(slot) << "a throwing call does not empty the slot";
}

std::atomic<int> plain_function_runs{0};
void PlainFunction(const Timeout&) { ++plain_function_runs; }

TEST(TaskSlotTimerTest, AFunctionNameAndAReferenceWrapperAreCallablesToo) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  Counts c;
  Small small(&c);
  ASSERT_TRUE(t.timer->newTimeout(PlainFunction, absl::Milliseconds(1)).ok());
  ASSERT_TRUE(
      t.timer->newTimeout(PlainFunction, std::chrono::milliseconds(1)).ok());
  ASSERT_TRUE(t.timer->newTimeout(std::ref(small), absl::Milliseconds(1)).ok());
  EXPECT_EQ(c.live, 1) << "a reference wrapper copies nothing";
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(plain_function_runs.load(), 2);
  EXPECT_EQ(c.calls, 1);
}

// Through the Timer: inline and boxed callables run once and die once;
// stop() hands each back whole; a throwing copy schedules nothing.
TEST(TaskSlotTimerTest, NewTimeoutTakesCallablesDirectly) {
  ManualTimer t = MakeManualTimer(Tick(absl::Milliseconds(1)));
  Counts small, large;
  ASSERT_TRUE(t.timer->newTimeout(Small(&small), absl::Milliseconds(1)).ok());
  ASSERT_TRUE(
      t.timer->newTimeout(Large(&large), std::chrono::milliseconds(1)).ok());
  const Small lvalue(&small);  // copied in
  ASSERT_TRUE(t.timer->newTimeout(lvalue, absl::Seconds(10)).ok());
  EXPECT_EQ(small.live, 3);  // two in nodes, and `lvalue`
  t.clock->AdvanceAndSettle(absl::Milliseconds(1));
  EXPECT_EQ(small.calls, 1);
  EXPECT_EQ(large.calls, 1);
  EXPECT_EQ(large.live, 0) << "captures die with the run";
  EXPECT_EQ(small.live, 2);

  Counts throwing;
  ThrowingCopy original(&throwing);
  EXPECT_THROW((void)t.timer->newTimeout(original, absl::Seconds(1)),
               std::runtime_error);
  EXPECT_EQ(t.timer->pendingTimeouts(), 1);

  absl::StatusOr<std::vector<Timeout>> left = t.timer->stop();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  TimerTask task = (*left)[0].takeTask();
  ASSERT_TRUE(task);
  task((*left)[0]);
  EXPECT_EQ(small.calls, 2);
  task = nullptr;
  EXPECT_EQ(small.live, 1);
}

}  // namespace
}  // namespace tickwheel::internal
