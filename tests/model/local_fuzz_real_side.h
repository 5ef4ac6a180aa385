// tests/model/local_fuzz_real_side.h
// -----------------------------------------------------------------------------
// The real side of the LocalTimer fuzzer's comparison: a tickwheel::LocalTimer
// on a ManualClock, driven by the calling thread (its owner), its timeouts by
// id, and the log of what its tasks did. Every task carries a Capture that
// counts itself alive, records each run and each action as an Event
// (tests/model/timer_model.h) and acts as its TaskAction says, as the Timer
// fuzzer's tasks do (tests/model/fuzz_real_side.h); Event::tick is the number
// of the advance() it runs in, from metrics().wakeups. The reference model is
// tests/model/local_timer_model.h.
//
// Ids count every scheduling attempt from 0, accepted or not.
//
// This class is thread-compatible: every call comes from the owner thread,
// except that the racer (tests/model/fuzz_races.h) may call cancel() on a
// handle from SharedHandle() meanwhile (alive() counts atomically).

#ifndef TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_REAL_SIDE_H_
#define TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_REAL_SIDE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"
#include "tickwheel/timer/local_timer.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::model {

// Whether bit 4 of byte 1 gives the LocalTimer a slack of 0 (below the
// tick). On: local_timer_slack_order_test pins the failure it found first.
inline constexpr bool kFuzzLocalSlackBelowTick = true;

// Whether deadlines may come near the end of the clock's range. Off: the
// clock starts at a reading at or above zero (DecodeConfig()'s negated
// starts are taken positive), and a deadline further than kFarDeadline
// from startTime is scheduled as one that never comes (an infinite delay,
// INT64_MAX), since a loop that follows the plan there spins or hangs
// (local_timer_clock_extremes_test's DISABLED_ tests pin how). Once the
// engine passes them, setting this to true is the one change needed.
inline constexpr bool kFuzzLocalEndOfRange = false;
inline constexpr int64_t kFarDeadline = int64_t{1} << 62;

// The configuration of bytes 0 and 1 (DecodeConfig()), but for bit 4 of
// byte 1, which selects a slack of 0 where kFuzzLocalSlackBelowTick allows
// (a LocalTimer has no task executor).
struct LocalFuzzConfig {
  FuzzConfig base;
  bool zero_slack = false;

  std::string ToString() const;
};
LocalFuzzConfig DecodeLocalConfig(Reader& in);

// Whether the fuzzer gives LocalTimer::newPeriodic() the decoded missed-run
// policy. Off until the model learns kBurst: LocalTimer runs a burst's
// missed runs back to back in one advance(), where the model allows one run
// of a periodic timeout per advance() (kSkip and kDelay never have a next
// run that is already due). local_timer_periodic_test covers the policies.
inline constexpr bool kFuzzLocalMissedRuns = false;

// LocalTimer::newPeriodic() takes a MissedRuns as its last argument.
template <typename T>
concept TakesMissedRuns = requires(T& timer, TimerTask task, absl::Duration d) {
  timer.newPeriodic(std::move(task), d, d, MissedRuns::kSkip);
};
static_assert(!kFuzzLocalMissedRuns || TakesMissedRuns<LocalTimer>,
              "LocalTimer::newPeriodic() takes no missed-run policy yet");

// The policy a periodic timeout of the LocalTimer fuzzer runs under.
inline Missed LocalPolicy(Missed decoded) {
  return kFuzzLocalMissedRuns ? decoded : Missed::kSkip;
}

class LocalRealSide {
 public:
  explicit LocalRealSide(const LocalFuzzConfig& config);

  const absl::Status& create_status() const { return create_status_; }
  LocalTimer* timer() const { return timer_.get(); }
  int ticks_per_wheel() const { return timer_->ticksPerWheel(); }

  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code);
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code);
  // newPeriodic(), with `missed` as its last argument where LocalTimer
  // takes one (then `missed` is LocalPolicy()'s).
  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, Missed missed, Code* code);

  bool Cancel(int64_t id) { return handles_[id].cancel(); }
  int64_t CancelAll() { return timer_->cancelAll(); }
  bool Reset(int64_t id, absl::Duration delay) {
    return handles_[id].reset(delay);
  }
  bool ResetAt(int64_t id, int64_t at);
  bool TakeTask(int64_t id) { return handles_[id].takeTask() != nullptr; }
  // Moves the clock only; advance() is a call of its own.
  void AdvanceClock(int64_t nanos) {
    clock_->Advance(absl::Nanoseconds(nanos));
  }
  int64_t Advance() { return timer_->advance(); }
  std::optional<int64_t> NextWakeup() const;
  int PollTimeoutMs() const { return timer_->pollTimeoutMs(); }
  int64_t NowNanos() const { return clock_->NowNanos(); }
  int64_t Expired() const { return timer_->metrics().expired; }
  // stop(); ids in the order returned (-1: unknown).
  std::vector<int64_t> Stop();
  void Destroy() { timer_.reset(); }
  int64_t Pending() const { return timer_->pendingTimeouts(); }

  int64_t next_id() const { return next_id_; }
  int alive(int64_t id) const { return alive_[id].load(); }
  const std::vector<Event>& events() const { return events_; }
  // Task `id`'s handle object (empty for a rejection). It stays where it
  // is: handles_ never resizes, and a task that runs during a race fills
  // only its children's slots.
  const Timeout& SharedHandle(int64_t id) const { return handles_[id]; }
  // Drops every handle (the last references to ended timeouts).
  void DropHandles() { std::vector<Timeout>().swap(handles_); }

 private:
  class Capture;

  TimerTask MakeTask(int64_t id, TaskAction action);
  void RunTask(int64_t id, const TaskAction& action, const Timeout& self);

  std::shared_ptr<ManualClock> clock_;
  absl::Status create_status_;
  int64_t next_id_ = 0;
  std::array<std::atomic<int>, kMaxIds> alive_;
  std::array<int, kMaxIds> runs_{};  // runs of each task
  std::vector<Timeout> handles_;     // by id, empty if rejected
  std::vector<Event> events_;
  // Last, so destroyed first: its tasks use everything above.
  std::unique_ptr<LocalTimer> timer_;
};

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_LOCAL_FUZZ_REAL_SIDE_H_
