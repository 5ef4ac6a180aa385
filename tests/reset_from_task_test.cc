// tests/reset_from_task_test.cc
// -----------------------------------------------------------------------------
// reset() from inside tasks, in random programs with fixed seeds, on a
// ManualClock: tasks reset other timeouts (later, earlier, into the past),
// cancel them and schedule children while the worker is in the middle of a
// pass, periodic tasks reset their own next run, and the test thread
// schedules, resets, cancels and moves the clock by a little or by many
// ticks at once (one catch-up pass over several wheel turns). Where the
// reference model (tests/model/) fixes the exact tick and order of every run
// for calls from the test thread, this test checks what the contract
// promises whatever thread calls:
//
//   * reset() returns true iff the timeout was pending (a one-shot timeout
//     from inside its own task: false), and deadline() then reads the new
//     deadline;
//   * nothing runs before its deadline (the last one a reset() set; for a
//     periodic timeout, the next grid time or the reset's), a one-shot runs
//     at most once, and nothing runs once cancelled;
//   * nothing is left behind: once the clock is two ticks past a deadline,
//     that timeout has run;
//   * pendingTimeouts() counts exactly what is pending, stop() returns
//     exactly that, and every task's captures are destroyed exactly once.
//
// Every program runs with the tick's own precision and with a slack below
// the tick (TimerOptions::slack).

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "tests/test_util.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel {
namespace {

using ::tickwheel::testing::DeadlineNanos;
using ::tickwheel::testing::LiveCount;
using ::tickwheel::testing::MakeManualTimer;
using ::tickwheel::testing::ManualTimer;

constexpr int64_t kTick = 1'000'000;  // 1 ms
constexpr int kTicksPerWheel = 8;     // deadlines span several levels
constexpr int kSteps = 80;
constexpr int kMaxSlots = 600;

// What a task does when it runs.
enum class Action {
  kNothing,
  kResetOther,  // reset() a random timeout to a random delay
  kResetOtherIntoThePast,
  kResetSelf,  // one-shot: must fail; periodic: moves the next run
  kCancelOther,
  kScheduleChild,
};

struct Slot {
  Timeout handle;
  bool periodic = false;
  int64_t period = 0;
  Action action = Action::kNothing;
  int cancel_after_runs = 0;  // periodic: cancels itself in that run
  bool pending = false;
  int64_t deadline = 0;  // clock reading it must not run before
  int runs = 0;
};

// What the programs of one test did, so that the test can show that it
// exercised what it claims to.
struct Tally {
  int64_t runs = 0;
  int64_t task_resets = 0;          // from a task, of another timeout: true
  int64_t task_resets_refused = 0;  // ... false
  int64_t self_resets = 0;          // periodic, during its run: true
  int64_t overdue_runs = 0;         // ran two or more ticks after it was due
};

// One random program against one timer. Tasks run on the worker while the
// test thread waits in AdvanceAndSettle(), so the two never act at once;
// the mutex still orders their accesses for the sanitizers.
class Program {
 public:
  Program(uint64_t seed, bool slack, Tally* tally) : rng_(seed), tally_(tally) {
    TimerOptions options =
        ::tickwheel::testing::Tick(absl::Nanoseconds(kTick), kTicksPerWheel);
    if (slack) options.slack = absl::Nanoseconds(kTick / 4);
    t_ = MakeManualTimer(std::move(options));
    slots_.reserve(kMaxSlots);
  }

  void Run() {
    for (int step = 0; step < kSteps && !::testing::Test::HasFailure();
         ++step) {
      const int op = Uniform(0, 99);
      if (op < 63) {
        TestThreadOp(op);
        // With a slack, a deadline of now may run at once: let it finish
        // before the next step reads the books.
        t_.clock->AwaitIdle();
      } else {
        const int64_t by = Uniform(0, 9) == 0 ? Uniform(10 * kTick, 40 * kTick)
                                              : Uniform(0, 3 * kTick);
        Advance(by);
      }
    }
    Finish();
  }

 private:
  void TestThreadOp(int op) {
    std::lock_guard<std::mutex> lock(mu_);
    if (op < 30) {
      ScheduleLocked(/*periodic=*/false, Uniform(0, 20 * kTick));
    } else if (op < 38) {
      ScheduleLocked(/*periodic=*/true, Uniform(0, 10 * kTick));
    } else if (slots_.empty()) {
      return;
    } else if (op < 55) {
      ResetLocked(PickLocked(), Uniform(-kTick, 30 * kTick), "test");
    } else {
      CancelLocked(PickLocked(), "test");
    }
  }

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  int64_t Now() const { return t_.clock->NowNanos(); }
  size_t PickLocked() { return Uniform(0, int64_t(slots_.size()) - 1); }

  void ScheduleLocked(bool periodic, int64_t delay) {
    if (slots_.size() >= kMaxSlots) return;
    const size_t id = slots_.size();
    Slot& s = slots_.emplace_back();
    s.periodic = periodic;
    s.action = static_cast<Action>(Uniform(0, 5));
    s.deadline = Now() + delay;
    auto task = [this, id, guard = LiveCount(&alive_)](const Timeout& self) {
      OnRun(id, self);
    };
    absl::StatusOr<Timeout> t;
    if (periodic) {
      s.period = Uniform(kTick / 3, 4 * kTick);
      s.cancel_after_runs = int(Uniform(1, 6));
      t = t_.timer->newPeriodic(task, absl::Nanoseconds(delay),
                                absl::Nanoseconds(s.period));
    } else {
      t = t_.timer->newTimeout(task, absl::Nanoseconds(delay));
    }
    ASSERT_TRUE(t.ok()) << t.status();
    s.handle = *t;
    s.pending = true;
    EXPECT_EQ(DeadlineNanos(s.handle), s.deadline) << "timeout " << id;
  }

  void ResetLocked(size_t id, int64_t delay, const char* who) {
    Slot& s = slots_[id];
    const bool ok = s.handle.reset(absl::Nanoseconds(delay));
    EXPECT_EQ(ok, s.pending) << who << " reset of timeout " << id;
    if (running_ != kNone && id != running_) {
      ++(ok ? tally_->task_resets : tally_->task_resets_refused);
    }
    if (!ok) return;
    if (id == running_) {
      reset_in_run_ = true;
      ++tally_->self_resets;
    }
    s.deadline = Now() + std::max<int64_t>(delay, 0);
    EXPECT_EQ(DeadlineNanos(s.handle), s.deadline) << "timeout " << id;
  }

  void CancelLocked(size_t id, const char* who) {
    Slot& s = slots_[id];
    EXPECT_EQ(s.handle.cancel(), s.pending)
        << who << " cancel of timeout " << id;
    s.pending = false;
  }

  // On the worker thread.
  void OnRun(size_t id, const Timeout& self) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[id];
    const int64_t now = Now();
    EXPECT_TRUE(s.pending) << "timeout " << id << " ran while not pending";
    EXPECT_GE(now, s.deadline) << "timeout " << id << " ran early";
    EXPECT_EQ(DeadlineNanos(self), s.deadline) << "timeout " << id;
    ++s.runs;
    ++tally_->runs;
    if (now >= s.deadline + 2 * kTick) ++tally_->overdue_runs;
    running_ = id;
    reset_in_run_ = false;
    if (!s.periodic) {
      EXPECT_EQ(s.runs, 1) << "one-shot timeout " << id << " ran twice";
      s.pending = false;
    }
    const int64_t run_deadline = s.deadline;
    switch (s.action) {
      case Action::kNothing:
        break;
      case Action::kResetOther:
        ResetLocked(PickLocked(), Uniform(0, 12 * kTick), "task");
        break;
      case Action::kResetOtherIntoThePast:
        ResetLocked(PickLocked(), -Uniform(0, 3 * kTick), "task");
        break;
      case Action::kResetSelf:
        if (s.periodic && s.runs % 2 == 0) break;  // every other run
        ResetLocked(id, Uniform(0, 6 * kTick), "self");
        break;
      case Action::kCancelOther:
        CancelLocked(PickLocked(), "task");
        break;
      case Action::kScheduleChild:
        if (s.runs <= 2) ScheduleLocked(false, Uniform(0, 5 * kTick));
        break;
    }
    running_ = kNone;
    if (!s.periodic || !s.pending) return;
    if (s.runs == s.cancel_after_runs) {
      EXPECT_TRUE(self.cancel()) << "periodic timeout " << id;
      s.pending = false;
      return;
    }
    if (!reset_in_run_) {
      // The first grid time after now.
      const int64_t missed = (now - run_deadline) / s.period + 1;
      s.deadline = run_deadline + missed * s.period;
    }
  }

  void Advance(int64_t by) {
    t_.clock->AdvanceAndSettle(absl::Nanoseconds(by));
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = Now();
    int64_t pending = 0;
    for (size_t id = 0; id < slots_.size(); ++id) {
      const Slot& s = slots_[id];
      if (!s.pending) continue;
      ++pending;
      EXPECT_GT(s.deadline + 2 * kTick, now)
          << "timeout " << id << " was left behind: due at " << s.deadline;
    }
    EXPECT_EQ(t_.timer->pendingTimeouts(), pending);
  }

  void Finish() {
    // Past every one-shot deadline, in steps (tasks that run meanwhile may
    // schedule and reset more).
    for (int i = 0; i < 1000 && !::testing::Test::HasFailure(); ++i) {
      int64_t last = INT64_MIN;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const Slot& s : slots_) {
          if (s.pending && !s.periodic) last = std::max(last, s.deadline);
        }
      }
      if (last == INT64_MIN || Now() >= last + 2 * kTick) break;
      Advance(3 * kTick);
    }
    std::vector<size_t> expected;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t id = 0; id < slots_.size(); ++id) {
        if (slots_[id].pending) {
          EXPECT_TRUE(slots_[id].periodic) << "timeout " << id;
          expected.push_back(id);
        }
      }
    }
    absl::StatusOr<std::vector<Timeout>> stopped = t_.timer->stop();
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    std::vector<size_t> returned;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Timeout& t : *stopped) {
        auto it = std::find_if(slots_.begin(), slots_.end(),
                               [&](const Slot& s) { return s.handle == t; });
        ASSERT_NE(it, slots_.end());
        returned.push_back(size_t(it - slots_.begin()));
      }
      slots_.clear();  // the handles
    }
    std::sort(returned.begin(), returned.end());
    EXPECT_EQ(returned, expected);
    stopped->clear();
    t_.timer.reset();
    EXPECT_EQ(alive_.load(), 0) << "captures not destroyed";
  }

  std::mt19937_64 rng_;
  Tally* tally_;
  std::atomic<int> alive_{0};
  std::mutex mu_;
  std::vector<Slot> slots_;  // guarded by mu_; by id, never reallocated
  // The timeout whose task is running, and whether it was reset meanwhile.
  static constexpr size_t kNone = SIZE_MAX;
  size_t running_ = kNone;
  bool reset_in_run_ = false;
  // Last, so destroyed first: its tasks use everything above.
  ManualTimer t_;
};

class ResetFromTaskTest : public ::testing::TestWithParam<bool> {};

TEST_P(ResetFromTaskTest, EveryPromiseHoldsInRandomPrograms) {
  Tally tally;
  for (uint64_t seed = 1; seed <= 200 && !HasFailure(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Program(seed, GetParam(), &tally).Run();
  }
  RecordProperty("runs", int(tally.runs));
  RecordProperty("task_resets", int(tally.task_resets));
  RecordProperty("task_resets_refused", int(tally.task_resets_refused));
  RecordProperty("self_resets", int(tally.self_resets));
  // The programs did what the test is about: tasks reset pending timeouts
  // and were refused for finished ones, periodic tasks moved their next
  // run, and catch-up passes ran timeouts long after they were due.
  EXPECT_GT(tally.task_resets, 0);
  EXPECT_GT(tally.task_resets_refused, 0);
  EXPECT_GT(tally.self_resets, 0);
  EXPECT_GT(tally.overdue_runs, 0);
}

INSTANTIATE_TEST_SUITE_P(TickAndSlack, ResetFromTaskTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Slack" : "Tick");
                         });

}  // namespace
}  // namespace tickwheel
