// tests/local_timer_test_util.h
// -----------------------------------------------------------------------------
// Helpers shared by the LocalTimer tests: a LocalTimer on a ManualClock,
// and a log of which tasks ran at which clock reading.

#ifndef TICKWHEEL_TESTS_LOCAL_TIMER_TEST_UTIL_H_
#define TICKWHEEL_TESTS_LOCAL_TIMER_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/manual_clock.h"

namespace tickwheel::testing {

// A LocalTimer on a ManualClock that starts at 0, plus the clock.
struct ManualLocalTimer {
  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<LocalTimer> timer;

  int64_t NowNanos() const { return clock->NowNanos(); }
  // Moves the clock to `nanos` (never back) and advances the timer;
  // returns how many tasks ran.
  int64_t AdvanceTo(int64_t nanos) {
    const int64_t now = clock->NowNanos();
    if (nanos > now) clock->Advance(absl::Nanoseconds(nanos - now));
    return timer->advance();
  }
};

inline ManualLocalTimer MakeLocalTimer(LocalTimerOptions options = {}) {
  ManualLocalTimer t;
  t.clock = std::make_shared<ManualClock>();
  options.clock = t.clock;
  absl::StatusOr<std::unique_ptr<LocalTimer>> timer =
      LocalTimer::Create(std::move(options));
  EXPECT_TRUE(timer.ok()) << timer.status();
  if (timer.ok()) t.timer = *std::move(timer);
  return t;
}

// Options with a 1 ms tick and `slack` (empty: one tick).
inline LocalTimerOptions LocalOptions(
    std::optional<absl::Duration> slack = std::nullopt) {
  LocalTimerOptions options;
  options.tick_duration = absl::Milliseconds(1);
  options.slack = slack;
  return options;
}

// Which task ran (its id), at which clock reading, in order. Tasks run on
// the test's thread, so no lock is needed.
struct RunLog {
  struct Run {
    int id;
    int64_t at;
  };
  std::vector<Run> runs;

  std::vector<int> Ids() const {
    std::vector<int> ids;
    for (const Run& r : runs) ids.push_back(r.id);
    return ids;
  }
};

// A task that records its run in `log` as `id`, at `clock`'s reading.
inline TimerTask LogTask(RunLog* log, int id, std::shared_ptr<Clock> clock) {
  return [log, id, clock](const Timeout&) {
    log->runs.push_back({id, clock->NowNanos()});
  };
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_LOCAL_TIMER_TEST_UTIL_H_
