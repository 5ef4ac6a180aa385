// tests/local_timer_slack_order_test.cc
// -----------------------------------------------------------------------------
// With a slack below the tick, advance() runs the tick in progress up to now
// in deadline order, and nextWakeup() names its earliest deadline plus the
// slack (docs/DESIGN.md, "LocalTimer"): the wheel sorts that tick's bucket
// by deadline. Timeouts that tasks schedule during an advance() are filed
// into the same bucket once the walk is over; they must be in the next plan
// and run in deadline order in the next advance() that reaches them, however
// the bucket's size moved meanwhile.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel {
namespace {

constexpr int64_t kUs = 1000;

int64_t Nanos(std::optional<TimePoint> t) {
  return t.has_value() ? t->time_since_epoch().count() : -1;
}

// Three timeouts due at once, each of whose tasks schedules a child due at
// once, which schedules a grandchild due at once; between the first two
// advance() calls the owner adds three later timeouts to the same tick. The
// grandchildren, filed by the second advance() with the deadline 100 us,
// are due before the later ones (600 and 800 us).
// The compaction that made room for the third grandchild brought the
// bucket's size back to its size at the last sort, which the wheel once
// took as proof that the bucket was still sorted: the grandchildren were
// left out of the plan and ran after the later ones.
TEST(LocalTimerSlackOrderTest,
     WhatTasksFileIntoTheTickInProgressIsPlannedAndRunsInOrder) {
  auto clock = std::make_shared<ManualClock>();
  LocalTimerOptions options;
  options.tick_duration = absl::Milliseconds(1);
  options.slack = absl::Microseconds(10);
  options.clock = clock;
  std::unique_ptr<LocalTimer> timer = LocalTimer::Create(options).value();
  LocalTimer* t = timer.get();
  std::vector<std::string> log;
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    t->newTimeout(
         [t, &log, n] {
           log.push_back("parent" + n);
           t->newTimeout(
                [t, &log, n] {
                  log.push_back("child" + n);
                  t->newTimeout([&log, n] { log.push_back("grandchild" + n); },
                                absl::ZeroDuration())
                      .value();
                },
                absl::ZeroDuration())
               .value();
         },
         absl::ZeroDuration())
        .value();
  }
  clock->Advance(absl::Microseconds(100));
  ASSERT_EQ(t->advance(), 3);  // the parents
  for (int us : {700, 700, 500}) {
    t->newTimeout([&log, us] { log.push_back("later" + std::to_string(us)); },
                  absl::Microseconds(us))
        .value();
  }
  ASSERT_EQ(t->advance(), 3);  // the children, at the same clock reading
  // The grandchildren's deadline is 100 us, the clock's reading: due now.
  // The plan is that deadline plus the slack, 10 us ahead: rounded up, a
  // wait of 1 ms at most.
  EXPECT_LE(Nanos(t->nextWakeup()), 110 * kUs);
  EXPECT_EQ(t->pollTimeoutMs(), 1);
  clock->Advance(absl::Microseconds(10));
  EXPECT_EQ(t->advance(), 3);  // the grandchildren
  clock->Advance(absl::Microseconds(790));
  EXPECT_EQ(t->advance(), 3);  // the later ones
  EXPECT_EQ(log, (std::vector<std::string>{
                     "parent0", "parent1", "parent2", "child0", "child1",
                     "child2", "grandchild0", "grandchild1", "grandchild2",
                     "later500", "later700", "later700"}));
}

}  // namespace
}  // namespace tickwheel
