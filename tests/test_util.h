// tests/test_util.h
// -----------------------------------------------------------------------------
// Helpers shared by the Timer tests: clock units, a ManualClock-driven timer
// factory, a probe that records whether a task ran and whether its captures
// were destroyed, a capture that counts its live copies, a log sink that
// captures messages, a task executor the test drives, a bounded wait on the
// real clock, and a few small checks.

#ifndef TICKWHEEL_TESTS_TEST_UTIL_H_
#define TICKWHEEL_TESTS_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/functional/any_invocable.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::testing {

// One microsecond and one millisecond in nanoseconds, for comparing clock
// readings.
inline constexpr int64_t kUs = 1000;
inline constexpr int64_t kMs = 1000 * kUs;

// `t.deadline()` as a clock reading in nanoseconds.
inline int64_t DeadlineNanos(const Timeout& t) {
  return std::chrono::nanoseconds(t.deadline().time_since_epoch()).count();
}

// Whether the message of `s` contains `text`: error messages must name the
// option or the numbers that were wrong.
inline bool StatusMentions(const absl::Status& s, std::string_view text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

// What happened to one task: ran (how often, at which clock time) and whether
// the object captured by the task was destroyed.
struct Probe {
  std::atomic<int> runs{0};
  std::atomic<int64_t> ran_at_nanos{-1};
  std::atomic<bool> captures_destroyed{false};
};

// A move-only object that marks its probe when the last copy is destroyed.
class CaptureGuard {
 public:
  explicit CaptureGuard(std::shared_ptr<Probe> probe)
      : probe_(std::move(probe)) {}
  CaptureGuard(CaptureGuard&& other) noexcept = default;
  CaptureGuard& operator=(CaptureGuard&&) = delete;
  ~CaptureGuard() {
    if (probe_ != nullptr) probe_->captures_destroyed.store(true);
  }

 private:
  std::shared_ptr<Probe> probe_;
};

// A capture that counts its live copies in `*alive`: one more when made or
// copied, one fewer when a copy that still counts is destroyed; a moved-from
// copy no longer counts. Once every copy of a task's captures is gone,
// `*alive` is back where it was; a copy destroyed twice takes it below.
class LiveCount {
 public:
  explicit LiveCount(std::atomic<int>* alive) : alive_(alive) {
    alive_->fetch_add(1);
  }
  LiveCount(const LiveCount& other) : alive_(other.alive_) {
    if (alive_ != nullptr) alive_->fetch_add(1);
  }
  LiveCount(LiveCount&& other) noexcept
      : alive_(std::exchange(other.alive_, nullptr)) {}
  LiveCount& operator=(const LiveCount&) = delete;
  ~LiveCount() {
    if (alive_ != nullptr) alive_->fetch_sub(1);
  }

 private:
  std::atomic<int>* alive_;
};

// A task that records its run in `probe` (reading `clock` for the time, when
// given) and captures a CaptureGuard.
inline TimerTask ProbeTask(std::shared_ptr<Probe> probe,
                           std::shared_ptr<Clock> clock = nullptr) {
  return [probe, clock, guard = CaptureGuard(probe)](const Timeout&) {
    probe->runs.fetch_add(1);
    if (clock != nullptr) probe->ran_at_nanos.store(clock->NowNanos());
  };
}

// A Timer on a ManualClock, plus the clock.
struct ManualTimer {
  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<Timer> timer;
};

inline ManualTimer MakeManualTimer(TimerOptions options) {
  ManualTimer t;
  t.clock = std::make_shared<ManualClock>();
  options.clock = t.clock;
  absl::StatusOr<std::unique_ptr<Timer>> timer =
      Timer::Create(std::move(options));
  EXPECT_TRUE(timer.ok()) << timer.status();
  if (timer.ok()) t.timer = *std::move(timer);
  return t;
}

inline TimerOptions Tick(absl::Duration tick, int ticks_per_wheel = 512) {
  TimerOptions options;
  options.tick_duration = tick;
  options.ticks_per_wheel = ticks_per_wheel;
  return options;
}

// Lets the worker drain its queues and finish the housekeeping wake-ups that
// follow queue traffic (at most one per tick, two ticks in all), so that a
// test can count the wake-ups that come after.
inline void SettlePastHousekeeping(ManualTimer& t) {
  t.clock->AwaitIdle();
  t.clock->AdvanceAndSettle(t.timer->tickDuration());
  t.clock->AdvanceAndSettle(t.timer->tickDuration());
}

// Installs a log sink that records messages; restores the previous sink when
// destroyed.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(SetLogSink([this](LogSeverity, std::string_view message) {
          std::lock_guard<std::mutex> lock(mu_);
          messages_.emplace_back(message);
        })) {}
  ~CapturedLog() { SetLogSink(previous_); }

  std::vector<std::string> messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> messages_;
  LogSink previous_;
};

// Polls `done` every millisecond until it holds or `limit` passes; returns
// whether it held. For the tests on the real clock: the limit is a generous
// bound for a loaded machine, never a timing assertion.
template <typename Done>
bool WaitUntil(Done&& done, absl::Duration limit = absl::Seconds(30)) {
  const absl::Time give_up = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// A task_executor's target that queues what it is given, so that a test
// decides when each task runs, or drops it unrun. Given a clock, it also
// notes the clock reading of each hand-over. Thread-safe.
class QueueExecutor {
 public:
  explicit QueueExecutor(std::shared_ptr<Clock> clock = nullptr)
      : clock_(std::move(clock)) {}

  void Post(absl::AnyInvocable<void()> f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (clock_ != nullptr) handed_at_.push_back(clock_->NowNanos());
    queue_.push_back(std::move(f));
  }
  // What it holds, to run or drop.
  std::vector<absl::AnyInvocable<void()>> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(queue_);
  }
  // Runs what it holds, in order, on the calling thread; returns how many.
  int RunAll() {
    std::vector<absl::AnyInvocable<void()>> held = Take();
    for (auto& f : held) f();
    return static_cast<int>(held.size());
  }
  // The clock reading of every hand-over (with a clock).
  std::vector<int64_t> handed_at() {
    std::lock_guard<std::mutex> lock(mu_);
    return handed_at_;
  }

 private:
  const std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  std::vector<absl::AnyInvocable<void()>> queue_;
  std::vector<int64_t> handed_at_;
};

// A task_executor that posts to `executor`; every copy holds `executor`,
// and `keep` (so that a test can tell when the last copy is gone).
inline std::function<void(absl::AnyInvocable<void()>)> PostTo(
    std::shared_ptr<QueueExecutor> executor,
    std::shared_ptr<void> keep = nullptr) {
  return [executor = std::move(executor), keep = std::move(keep)](
             absl::AnyInvocable<void()> f) { executor->Post(std::move(f)); };
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_TEST_UTIL_H_
