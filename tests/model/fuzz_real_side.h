// tests/model/fuzz_real_side.h
// -----------------------------------------------------------------------------
// The real side of the fuzzers' comparison: a tickwheel::Timer (its worker
// settled after every advance, so that what it did is exact) or a
// tickwheel::LocalTimer (driven by the calling thread, its owner, as an event
// loop drives it), on a ManualClock; its timeouts by id, and the log of what
// its tasks did. Every task carries a Capture that counts itself alive,
// records each run and each action as an Event (tests/model/timer_model.h),
// in the order the timer performs them, and acts as its TaskAction says. The
// reference model produces the same events for the same operations.
//
// Event::tick is metrics().ticks inside the task on a Timer, and the number
// of the advance() it runs in (from metrics().wakeups) on a LocalTimer.
//
// Ids count every newTimeout(), newTimeoutAt() and newPeriodic() attempt
// from 0, accepted or not, as the model's do.
//
// This class is thread-safe: a Timer's tasks run on its worker while the test
// thread and the racer (tests/model/fuzz_races.h) call it.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/timer_model.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::model {

// Attempts (newTimeout() calls) one input can make: kMaxOps from the test
// thread, each with a chain of at most three children.
inline constexpr int64_t kMaxIds = 4 * kMaxOps + 8;

// Installs, once per process, a log sink that counts the task exceptions the
// timers log; TaskThrowsLogged() reads the count.
void InstallLogSinkOnce();
int64_t TaskThrowsLogged();

// Whether the LocalTimer fuzzer gives newPeriodic() the decoded missed-run
// policy. Off until the model learns a LocalTimer's kBurst: LocalTimer runs
// a burst's missed runs back to back in one advance(), where the model
// allows one run of a periodic timeout per advance() (kSkip and kDelay never
// have a next run that is already due). local_timer_periodic_test covers
// the policies.
inline constexpr bool kFuzzLocalMissedRuns = false;

// Timer::newPeriodic() and LocalTimer::newPeriodic() take a MissedRuns as
// their last argument.
template <typename T>
concept TakesMissedRuns = requires(T& timer, TimerTask task, absl::Duration d) {
  timer.newPeriodic(std::move(task), d, d, MissedRuns::kSkip);
};
static_assert(!kFuzzLocalMissedRuns || TakesMissedRuns<LocalTimer>,
              "LocalTimer::newPeriodic() takes no missed-run policy yet");

class RealSide {
 public:
  explicit RealSide(const FuzzConfig& config);

  const absl::Status& create_status() const { return create_status_; }
  bool local() const { return local_kind_; }
  int ticks_per_wheel() const {
    return local_kind_ ? local_->ticksPerWheel() : timer_->ticksPerWheel();
  }

  // newTimeout(); returns the id and sets `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  // newTimeoutAt() with `at`, a clock reading.
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  // newPeriodic() with `missed` as its last argument, or without one.
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, std::optional<Missed> missed,
                           Code* code);

  bool Cancel(int64_t id) { return Handle(id).cancel(); }
  int64_t CancelAll() {
    return local_kind_ ? local_->cancelAll() : timer_->cancelAll();
  }
  bool Reset(int64_t id, absl::Duration delay) {
    return Handle(id).reset(delay);
  }
  bool ResetAt(int64_t id, int64_t at);
  bool TakeTask(int64_t id) { return Handle(id).takeTask() != nullptr; }
  // Moves the clock only (a LocalTimer's advance() is a call of its own).
  void AdvanceClock(int64_t nanos) {
    clock_->Advance(absl::Nanoseconds(nanos));
  }
  // A Timer: moves the clock and settles the worker. A LocalTimer: moves the
  // clock, then advance(). Returns how many runs the timer made in it
  // (advance()'s result on a LocalTimer, the events on a Timer).
  int64_t Advance(int64_t nanos);
  // Waits until a Timer's worker has finished what a call woke it for.
  void Settle() {
    if (!local_kind_) clock_->AwaitIdle();
  }
  // metrics().ticks inside each run of task `id` so far.
  std::vector<int64_t> RunTicks(int64_t id);
  // LocalTimer: nextWakeup() (a clock reading), pollTimeoutMs().
  std::optional<int64_t> NextWakeup() const;
  int PollTimeoutMs() const { return local_->pollTimeoutMs(); }
  int64_t NowNanos() const { return clock_->NowNanos(); }
  // LocalTimer::now(), a query any thread may make.
  TimePoint LocalNow() const { return local_->now(); }
  int64_t Expired() const {
    return local_kind_ ? local_->metrics().expired : timer_->metrics().expired;
  }

  // stop() from the test thread; ids in the order returned (-1: unknown).
  // A LocalTimer's stop() has no status: OK.
  std::vector<int64_t> Stop(Code* code);

  void Destroy() {
    timer_.reset();
    local_.reset();
  }
  int64_t Pending() const {
    return local_kind_ ? local_->pendingTimeouts() : timer_->pendingTimeouts();
  }
  int64_t next_id() const { return next_id_.load(); }
  int alive(int64_t id) const { return alive_[id].load(); }
  std::vector<Event> events();

  // A copy of task `id`'s handle (empty for an unknown id or a rejection).
  Timeout Handle(int64_t id);
  // Task `id`'s handle object itself, not a copy, for the race operations,
  // which call it from two threads at once. The reference stays valid:
  // handles_ never resizes, and nothing assigns to a slot during a race
  // (tasks that run meanwhile fill only their children's slots).
  const Timeout& SharedHandle(int64_t id);
  // Drops every handle (the last references to stopped or expired nodes).
  void DropHandles();

 private:
  class Capture;

  // Calls `f` with the timer, whichever type it is: the scheduling calls
  // are the same (timer/scheduling.h).
  template <typename F>
  decltype(auto) Visit(F&& f) {
    if (local_kind_) return f(*local_);
    return f(*timer_);
  }
  int64_t Record(int64_t id, absl::StatusOr<Timeout> t, Code* code);
  TimerTask MakeTask(int64_t id, TaskAction action);
  void SetHandle(int64_t id, Timeout t);
  void Record(Event e);
  // Runs on a Timer's worker thread (or inline in its task executor), or in
  // a LocalTimer's advance().
  void RunTask(int64_t id, const TaskAction& action, const Timeout& self);

  const bool local_kind_;
  std::shared_ptr<ManualClock> clock_;
  absl::Status create_status_;
  std::atomic<int64_t> next_id_{0};
  std::array<std::atomic<int>, kMaxIds> alive_;
  std::array<std::atomic<int>, kMaxIds> runs_;  // runs of each task
  std::mutex mu_;
  std::vector<Timeout> handles_;  // guarded by mu_; by id, empty if rejected
  std::vector<Event> events_;     // guarded by mu_
  // Last, so destroyed first: their tasks use everything above. One of the
  // two exists, by the configuration's kind.
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<LocalTimer> local_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_
