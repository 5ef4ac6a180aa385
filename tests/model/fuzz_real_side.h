// tests/model/fuzz_real_side.h
// -----------------------------------------------------------------------------
// The real side of the fuzzer's comparison: a tickwheel::Timer on a
// ManualClock (settled after every advance, so that what it did is exact),
// its timeouts by id, and the log of what its tasks did. Every task carries
// a Capture that counts itself alive, records each run and each action as
// an Event (tests/model/timer_model.h), in the order the worker performs
// them, and acts as its TaskAction says. The reference model produces the
// same events for the same operations; tests/model/fuzz_compare.h compares.
//
// Ids count every newTimeout(), newTimeoutAt() and newPeriodic() attempt
// from 0, accepted or not, as the model's do.
//
// This class is thread-safe: its tasks run on the worker while the test
// thread and the racer (tests/model/fuzz_races.h) call it.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/model/fuzz_harness.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/timer_model.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::model {

// Attempts (newTimeout() calls) one input can make: kMaxOps from the test
// thread, each with a chain of at most three children.
inline constexpr int64_t kMaxIds = 4 * kMaxOps + 8;

// Installs, once per process, a log sink that counts the task exceptions the
// worker logs; TaskThrowsLogged() reads the count.
void InstallLogSinkOnce();
int64_t TaskThrowsLogged();

class RealSide {
 public:
  explicit RealSide(const FuzzConfig& config);

  const absl::Status& create_status() const { return create_status_; }
  Timer* timer() const { return timer_.get(); }
  int ticks_per_wheel() const { return timer_->ticksPerWheel(); }

  // newTimeout() on this side's timer; returns the id and sets `*code`.
  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code) {
    return ScheduleOn(timer_.get(), empty_task, delay, action, code);
  }
  // newTimeout() on `timer` (tasks use their own Timeout's timer()).
  int64_t ScheduleOn(Timer* timer, bool empty_task, absl::Duration delay,
                     TaskAction action, Code* code);
  // newTimeoutAt() with `at`, a clock reading.
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  // newPeriodic() with `missed` as its last argument, or without one.
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, std::optional<Missed> missed,
                           Code* code);

  bool Cancel(int64_t id) { return Handle(id).cancel(); }
  int64_t CancelAll() { return timer_->cancelAll(); }
  bool Reset(int64_t id, absl::Duration delay) {
    return Handle(id).reset(delay);
  }
  bool ResetAt(int64_t id, int64_t at);
  bool TakeTask(int64_t id) { return Handle(id).takeTask() != nullptr; }
  void Advance(int64_t nanos) {
    clock_->AdvanceAndSettle(absl::Nanoseconds(nanos));
  }
  // Waits until the worker has finished what a newTimeout() woke it for.
  void Settle() { clock_->AwaitIdle(); }
  // metrics().ticks inside each run of task `id` so far.
  std::vector<int64_t> RunTicks(int64_t id);

  // stop() from the test thread; ids in the order returned (-1: unknown).
  std::vector<int64_t> Stop(Code* code);

  void Destroy() { timer_.reset(); }
  int64_t Pending() const { return timer_->pendingTimeouts(); }
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

  TimerTask MakeTask(int64_t id, TaskAction action);
  void SetHandle(int64_t id, Timeout t);
  void Record(Event e);
  // Runs on the worker thread (or inline in the task executor).
  void RunTask(int64_t id, const TaskAction& action, const Timeout& self);

  std::shared_ptr<ManualClock> clock_;
  absl::Status create_status_;
  std::atomic<int64_t> next_id_{0};
  std::array<std::atomic<int>, kMaxIds> alive_;
  std::array<std::atomic<int>, kMaxIds> runs_;  // runs of each task
  std::mutex mu_;
  std::vector<Timeout> handles_;  // guarded by mu_; by id, empty if rejected
  std::vector<Event> events_;     // guarded by mu_
  // Last, so destroyed first: its tasks use everything above.
  std::unique_ptr<Timer> timer_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_REAL_SIDE_H_
