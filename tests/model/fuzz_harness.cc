#include "tests/model/fuzz_harness.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/model/timer_model.h"
#include "tickwheel/timer/manual_clock.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::model {
namespace {

// Attempts (newTimeout() calls) one input can make: kMaxOps from the test
// thread, each with a chain of at most three children.
constexpr int64_t kMaxIds = 4 * kMaxOps + 8;

std::atomic<int64_t> ops_executed{0};
std::atomic<int64_t> races_executed{0};
std::atomic<int64_t> task_throws_logged{0};

void InstallLogSinkOnce() {
  static const bool installed = [] {
    SetLogSink([](LogSeverity, std::string_view message) {
      if (message.find("task threw") != std::string_view::npos) {
        task_throws_logged.fetch_add(1, std::memory_order_relaxed);
      }
    });
    return true;
  }();
  (void)installed;
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

struct FuzzConfig {
  int64_t tick_nanos = 1;
  int ticks_per_wheel = 1;
  int64_t max_pending = 0;
  bool inline_executor = false;
  int64_t clock_start = 0;

  std::string ToString() const {
    return fmt::format(
        "tick={}ns ticks_per_wheel={} max_pending={} inline_executor={} "
        "clock_start={}",
        tick_nanos, ticks_per_wheel, max_pending, inline_executor, clock_start);
  }
};

FuzzConfig DecodeConfig(Reader& in) {
  static constexpr std::array<int64_t, 8> kTicks = {1,  2,   3,    7,
                                                    10, 100, 1000, 1000000};
  static constexpr std::array<int, 8> kWheels = {1, 2, 3, 4, 5, 8, 16, 64};
  // Clock readings at which the ManualClock starts; bit 7 negates them (a
  // clock may have any origin: tests/clock_extremes_test.cc).
  static constexpr std::array<int64_t, 4> kStarts = {0, 1, 999999999,
                                                     int64_t{1} << 60};
  const uint8_t b0 = in.Byte();
  const uint8_t b1 = in.Byte();
  FuzzConfig c;
  c.tick_nanos = kTicks[b0 & 7];
  c.ticks_per_wheel = kWheels[(b0 >> 3) & 7];
  c.max_pending = (b1 & 15) < 6 ? 0 : (b1 & 15) - 5;
  c.inline_executor = (b1 & 16) != 0;
  c.clock_start = kStarts[(b1 >> 5) & 3];
  if (b1 & 0x80) c.clock_start = -c.clock_start - 1;
  return c;
}

// A delay: exact multiples of the tick, one nanosecond either side, half ticks,
// whole turns of the wheel, negative values, and the extremes.
absl::Duration DecodeDelay(uint8_t c, int64_t tick, int64_t wheel) {
  const int64_t k = c & 31;
  switch (c >> 5) {
    case 0:
      return absl::Nanoseconds(k * tick);
    case 1:
      return absl::Nanoseconds(k * tick - 1);
    case 2:
      return absl::Nanoseconds(k * tick + 1);
    case 3:
      return absl::Nanoseconds(k * tick + tick / 2);
    case 4:
      return absl::Nanoseconds(((k & 7) * wheel + (k >> 3)) * tick);
    case 5:
      return absl::Nanoseconds(-k * tick - 1);
    case 6: {
      static const std::array<absl::Duration, 8> kSpecial = {
          absl::InfiniteDuration(),
          -absl::InfiniteDuration(),
          absl::Nanoseconds(INT64_MAX),
          absl::Nanoseconds(INT64_MAX - 1),
          absl::Nanoseconds(INT64_MIN),
          absl::Hours(2562048),  // just over INT64_MAX nanoseconds
          absl::Nanoseconds(INT64_MAX / 2),
          absl::ZeroDuration(),
      };
      return kSpecial[k & 7];
    }
    default:
      return absl::Nanoseconds(k);  // raw nanoseconds, mostly below a tick
  }
}

TaskAction DecodeAction(uint8_t a, int64_t tick, int64_t wheel) {
  TaskAction action;
  action.repeat = a & 3;
  const std::array<int64_t, 8> kChildDelays = {
      0, -1, 1, tick / 2, tick, tick + 1, 3 * tick, wheel * tick + 1};
  action.child_delay = absl::Nanoseconds(kChildDelays[(a >> 2) & 7]);
  switch (a >> 5) {
    case 4:
      action.cancel_previous = true;
      break;
    case 5:
      action.cancel_previous = true;
      action.throw_after = true;
      break;
    case 6:
      action.try_stop = true;
      break;
    case 7:
      action.throw_after = true;
      break;
    default:
      break;
  }
  return action;
}

// An advance: raw nanoseconds, whole ticks, ticks plus one nanosecond, whole
// turns of the wheel minus one nanosecond.
int64_t DecodeAdvance(uint8_t c, int64_t tick, int64_t wheel) {
  const int64_t k = c & 63;
  switch (c >> 6) {
    case 0:
      return k;
    case 1:
      return k * tick;
    case 2:
      return k * tick + 1;
    default:
      return ((k & 7) * wheel + ((k >> 3) & 7)) * tick - 1;
  }
}

// The real timer, instrumented. Tasks record what they do; every task carries a
// Capture that counts itself alive.
class RealSide {
 public:
  explicit RealSide(const FuzzConfig& config)
      : clock_(std::make_shared<ManualClock>(config.clock_start)) {
    for (auto& a : alive_) a.store(0, std::memory_order_relaxed);
    for (auto& r : runs_) r.store(0, std::memory_order_relaxed);
    TimerOptions options;
    options.tick_duration = absl::Nanoseconds(config.tick_nanos);
    options.ticks_per_wheel = config.ticks_per_wheel;
    options.max_pending_timeouts = config.max_pending;
    options.thread_name = "tickwheel-fuzz";
    options.clock = clock_;
    if (config.inline_executor) {
      options.task_executor = [](absl::AnyInvocable<void()> run) { run(); };
    }
    auto timer = Timer::Create(std::move(options));
    create_status_ = timer.status();
    if (timer.ok()) timer_ = *std::move(timer);
    handles_.resize(kMaxIds);
  }

  const absl::Status& create_status() const { return create_status_; }
  Timer* timer() const { return timer_.get(); }
  int ticks_per_wheel() const { return timer_->ticksPerWheel(); }

  int64_t Schedule(bool empty_task, absl::Duration delay, TaskAction action,
                   Code* code) {
    return ScheduleOn(timer_.get(), empty_task, delay, action, code);
  }

  // newTimeout() on `timer` (tasks use their own Timeout's timer()).
  int64_t ScheduleOn(Timer* timer, bool empty_task, absl::Duration delay,
                     TaskAction action, Code* code) {
    const int64_t id = next_id_.fetch_add(1);
    absl::StatusOr<Timeout> t = timer->newTimeout(
        empty_task ? TimerTask() : MakeTask(id, action), delay);
    *code = CodeOf(t.status());
    if (t.ok()) SetHandle(id, *std::move(t));
    return id;
  }

  // newTimeoutAt() with `at`, a clock reading.
  int64_t ScheduleAt(int64_t at, TaskAction action, Code* code) {
    const int64_t id = next_id_.fetch_add(1);
    absl::StatusOr<Timeout> t = timer_->newTimeoutAt(
        MakeTask(id, action), TimePoint(std::chrono::nanoseconds(at)));
    *code = CodeOf(t.status());
    if (t.ok()) SetHandle(id, *std::move(t));
    return id;
  }

  int64_t SchedulePeriodic(absl::Duration initial_delay, absl::Duration period,
                           TaskAction action, Code* code) {
    const int64_t id = next_id_.fetch_add(1);
    absl::StatusOr<Timeout> t =
        timer_->newPeriodic(MakeTask(id, action), initial_delay, period);
    *code = CodeOf(t.status());
    if (t.ok()) SetHandle(id, *std::move(t));
    return id;
  }

  bool Cancel(int64_t id) { return Handle(id).cancel(); }
  int64_t CancelAll() { return timer_->cancelAll(); }
  bool Reset(int64_t id, absl::Duration delay) {
    return Handle(id).reset(delay);
  }
  bool ResetAt(int64_t id, int64_t at) {
    return Handle(id).resetAt(TimePoint(std::chrono::nanoseconds(at)));
  }
  bool TakeTask(int64_t id) { return Handle(id).takeTask() != nullptr; }
  void Advance(int64_t nanos) {
    clock_->AdvanceAndSettle(absl::Nanoseconds(nanos));
  }
  // Waits until the worker has finished what a newTimeout() woke it for.
  void Settle() { clock_->AwaitIdle(); }
  // metrics().ticks inside each run of task `id` so far.
  std::vector<int64_t> RunTicks(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> ticks;
    for (const Event& e : events_) {
      if (e.kind == Event::Kind::kRan && e.id == id) ticks.push_back(e.tick);
    }
    return ticks;
  }

  // stop() from the test thread; ids in the order returned (-1: unknown).
  std::vector<int64_t> Stop(Code* code) {
    absl::StatusOr<std::vector<Timeout>> r = timer_->stop();
    *code = CodeOf(r.status());
    std::vector<int64_t> ids;
    if (!r.ok()) return ids;
    std::lock_guard<std::mutex> lock(mu_);
    for (const Timeout& t : *r) {
      int64_t found = -1;
      for (int64_t id = 0; id < next_id_.load(); ++id) {
        if (handles_[id] && handles_[id] == t) found = id;
      }
      ids.push_back(found);
    }
    return ids;
  }

  void Destroy() { timer_.reset(); }
  int64_t Pending() const { return timer_->pendingTimeouts(); }
  int64_t next_id() const { return next_id_.load(); }
  int alive(int64_t id) const { return alive_[id].load(); }

  std::vector<Event> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  Timeout Handle(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return id >= 0 && id < kMaxIds ? handles_[id] : Timeout();
  }

  // Task `id`'s handle object itself, not a copy, for the race operations,
  // which call it from two threads at once. The reference stays valid:
  // handles_ never resizes, and nothing assigns to a slot during a race
  // (tasks that run meanwhile fill only their children's slots).
  const Timeout& SharedHandle(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return handles_[id];
  }

  void DropHandles() {
    std::vector<Timeout> handles;
    {
      std::lock_guard<std::mutex> lock(mu_);
      handles.swap(handles_);
    }
  }

 private:
  // Counts itself in alive_[id] while it exists; moving transfers the count.
  class Capture {
   public:
    Capture(RealSide* owner, int64_t id) : owner_(owner), id_(id) {
      owner_->alive_[id_].fetch_add(1);
    }
    Capture(Capture&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}
    Capture& operator=(Capture&&) = delete;
    ~Capture() {
      if (owner_ != nullptr) owner_->alive_[id_].fetch_sub(1);
    }

   private:
    RealSide* owner_;
    int64_t id_;
  };

  TimerTask MakeTask(int64_t id, TaskAction action) {
    return [this, action, capture = Capture(this, id),
            id](const Timeout& self) { RunTask(id, action, self); };
  }

  void SetHandle(int64_t id, Timeout t) {
    std::lock_guard<std::mutex> lock(mu_);
    handles_[id] = std::move(t);
  }

  void Record(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
  }

  // Runs on the worker thread (or inline in the task executor).
  void RunTask(int64_t id, const TaskAction& action, const Timeout& self) {
    Timer* timer = self.timer();
    const int64_t tick = timer->metrics().ticks;
    const int64_t clock = clock_->NowNanos();
    Record({Event::Kind::kRan, id, tick, clock, -1, 0});
    if (action.repeat > 0) {
      Code code;
      const int64_t child =
          ScheduleOn(timer, false, action.child_delay, action.Child(), &code);
      Record({Event::Kind::kChildScheduled, id, tick, clock, child,
              static_cast<int>(code)});
    }
    if (action.cancel_previous) {
      const bool ok = Handle(id - 1).cancel();
      Record(
          {Event::Kind::kCancelledOther, id, tick, clock, id - 1, ok ? 1 : 0});
    }
    if (action.cancel_all) {
      const int64_t count = timer->cancelAll();
      Record({Event::Kind::kCancelAllFromTask, id, tick, clock, -1,
              static_cast<int>(count)});
    }
    // Periodic runs never overlap, so the count needs no more than atomicity.
    const int runs = runs_[id].fetch_add(1) + 1;
    if (self.isPeriodic() && action.periodic_runs > 0 &&
        runs == action.periodic_runs) {
      const bool ok = self.cancel();
      Record({Event::Kind::kCancelledSelf, id, tick, clock, id, ok ? 1 : 0});
    }
    if (action.try_stop) {
      const Code code = CodeOf(timer->stop().status());
      Record({Event::Kind::kStopFromTask, id, tick, clock, -1,
              static_cast<int>(code)});
    }
    if (action.throw_after) throw std::runtime_error("fuzz task throws");
  }

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

// Everything observable, compared after every operation.
std::string Compare(const TimerModel& model, RealSide& real,
                    int64_t throws_before) {
  if (real.next_id() != model.next_id()) {
    return fmt::format("attempt count: real {} model {}", real.next_id(),
                       model.next_id());
  }
  const std::vector<Event> events = real.events();
  const std::vector<Event>& expected = model.events();
  for (size_t i = 0; i < std::max(events.size(), expected.size()); ++i) {
    const std::string r = i < events.size() ? events[i].ToString() : "(none)";
    const std::string m =
        i < expected.size() ? expected[i].ToString() : "(none)";
    if (r != m) {
      return fmt::format("task event #{}: real {} model {}", i, r, m);
    }
  }
  if (!model.destroyed() && real.Pending() != model.Pending()) {
    return fmt::format("pendingTimeouts(): real {} model {}", real.Pending(),
                       model.Pending());
  }
  for (int64_t id = 0; id < model.next_id(); ++id) {
    const int alive = real.alive(id);
    if (alive < 0 || alive > 1) {
      return fmt::format("task {}: {} live captures (destroyed twice?)", id,
                         alive);
    }
    if ((alive == 1) != model.CapturesAlive(id)) {
      return fmt::format("task {}: captures alive: real {} model {}", id,
                         alive == 1, model.CapturesAlive(id));
    }
    const Timeout t = real.Handle(id);
    if (t.isExpired() != model.IsExpired(id) ||
        t.isCancelled() != model.IsCancelled(id)) {
      return fmt::format(
          "task {}: isExpired/isCancelled: real {}/{} model {}/{}", id,
          t.isExpired(), t.isCancelled(), model.IsExpired(id),
          model.IsCancelled(id));
    }
    if (model.state(id) == TimerModel::State::kRejected) continue;
    if (t.isPeriodic() != model.IsPeriodic(id)) {
      return fmt::format("task {}: isPeriodic: real {} model {}", id,
                         t.isPeriodic(), model.IsPeriodic(id));
    }
    // A periodic timeout cancelled during its own run keeps that run's
    // deadline or the next one's, depending on the task executor.
    const bool deadline_known =
        !model.IsPeriodic(id) ||
        model.state(id) != TimerModel::State::kCancelled;
    const int64_t deadline = t.deadline().time_since_epoch().count();
    if (deadline_known && deadline != model.ClockDeadline(id)) {
      return fmt::format("task {}: deadline(): real {} model {}", id, deadline,
                         model.ClockDeadline(id));
    }
  }
  const int64_t throws = task_throws_logged.load() - throws_before;
  if (throws != model.throws()) {
    return fmt::format("task exceptions logged: real {} model {}", throws,
                       model.throws());
  }
  return "";
}

std::string CompareStop(const TimerModel& model, Code code,
                        const std::vector<int64_t>& real_ids,
                        const std::vector<int64_t>& model_ids) {
  if (code != Code::kOk) {
    return fmt::format("stop(): {} from the test thread", CodeName(code));
  }
  std::vector<int64_t> a = real_ids, b = model_ids;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) {
    return fmt::format("stop() returned ids [{}], model [{}]",
                       fmt::join(real_ids, ","), fmt::join(model_ids, ","));
  }
  for (size_t i = 1; i < real_ids.size(); ++i) {
    if (model.ClockDeadline(real_ids[i - 1]) >
        model.ClockDeadline(real_ids[i])) {
      return fmt::format("stop() not in deadline order: [{}]",
                         fmt::join(real_ids, ","));
    }
  }
  return "";
}

// A second thread for the race operations. Race() runs one part on the
// calling thread and the other on the racer's, released together (both spin
// until both have arrived) so that the two overlap as closely as threads can.
class Racer {
 public:
  // One for the process, never destroyed: the fuzzer runs input after input.
  static Racer& Get() {
    static Racer* const racer = new Racer;
    return *racer;
  }

  void Race(const std::function<void()>& mine,
            const std::function<void()>& theirs) {
    arrived_.store(0);
    done_.store(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &theirs;
    }
    cv_.notify_one();
    Arrive();
    mine();
    while (!done_.load(std::memory_order_acquire)) std::this_thread::yield();
  }

 private:
  Racer() : thread_([this] { Loop(); }) { thread_.detach(); }

  void Arrive() {
    arrived_.fetch_add(1);
    while (arrived_.load() < 2) std::this_thread::yield();
  }

  void Loop() {
    for (;;) {
      const std::function<void()>* job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return job_ != nullptr; });
        job = std::exchange(job_, nullptr);
      }
      Arrive();
      (*job)();
      done_.store(true, std::memory_order_release);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* job_ = nullptr;  // guarded by mu_
  std::atomic<int> arrived_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// What a race operation needs of RunFuzzInput's state.
struct RaceContext {
  RealSide& real;
  TimerModel& model;
  int64_t tick;
  int64_t wheel;
  bool unlimited;  // max_pending unset: no rejection depends on the order
  int64_t* ticks_left;
  std::string* trace;

  // An advance decoded from `byte`, cut to what is left of the input's
  // tick budget, and charged to it.
  int64_t TakeAdvance(uint8_t byte) {
    const int64_t nanos =
        std::min(DecodeAdvance(byte, tick, wheel), *ticks_left * tick);
    *ticks_left -= nanos / tick;
    return nanos;
  }
};

std::string NotPending(int64_t id) {
  return fmt::format("race: cancel(#{}) won, but the model has it not pending",
                     id);
}
std::string StillPending(int64_t id, const char* after) {
  return fmt::format(
      "race: cancel(#{}) lost, but the model has it pending "
      "after {}",
      id, after);
}

// A race operation: the test thread and the racer act at once on the same
// handle object (or on the timer), and the model checks that the outcome is
// one of the orders the two calls could take. Kinds (bits 0-2 of the opcode
// byte; the next byte picks the timeout):
//   0, 7  cancel() from both threads through the one handle object
//   1     cancel() from both threads, through two copies
//   2     cancel() while the racer copies and drops the handle
//   3     the racer's cancel() while the clock advances (tasks run)
//   4     the racer's cancel() while the test thread calls stop()
//   5     takeTask() from both threads through the one handle object
//   6     the racer's cancel() while the test thread destroys the Timer
// A kind that needs the timer acts as kind 0 once it is destroyed; kind 3
// does too with max_pending set, where a task's child may be rejected or not
// depending on where the cancel lands inside the advance, and on a periodic
// timeout, which a cancel() may end after some of the advance's runs.
std::string RunRace(int kind, Reader& in, RaceContext& c) {
  if (c.model.next_id() == 0) return "";
  races_executed.fetch_add(1, std::memory_order_relaxed);
  const int64_t id = in.Byte() % c.model.next_id();
  const bool timer_gone = c.model.destroyed();
  if ((timer_gone && (kind == 3 || kind == 4 || kind == 6)) ||
      (kind == 3 && (!c.unlimited || c.model.IsPeriodic(id)))) {
    kind = 0;
  }
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  auto cancel_shared = [&] {
    if (shared.cancel()) wins.fetch_add(1);
  };
  switch (kind) {
    case 1:
    case 2: {
      const Timeout copy = shared;
      Racer::Get().Race(cancel_shared, [&] {
        if (kind == 1) {
          if (copy.cancel()) wins.fetch_add(1);
          return;
        }
        for (int i = 0; i < 8; ++i) {
          Timeout again = shared;
          (void)again.isCancelled();
        }
      });
      break;
    }
    case 3: {
      const int64_t nanos = c.TakeAdvance(in.Byte());
      Racer::Get().Race([&] { c.real.Advance(nanos); }, cancel_shared);
      *c.trace += fmt::format("  race: cancel(#{}) -> {} || advance({}ns)\n",
                              id, wins.load(), nanos);
      // Either order: the cancel before the advance, or after it.
      const std::vector<Event> observed = c.real.events();
      auto advance = [&] {
        c.model.Advance(absl::Nanoseconds(nanos), &observed);
      };
      if (wins.load() == 1) {
        if (!c.model.Cancel(id)) return NotPending(id);
        advance();
      } else {
        advance();
        if (c.model.Cancel(id)) return StillPending(id, "the advance");
      }
      return "";
    }
    case 4: {
      Code code;
      std::vector<int64_t> stopped;
      Racer::Get().Race([&] { stopped = c.real.Stop(&code); }, cancel_shared);
      *c.trace += fmt::format("  race: cancel(#{}) -> {} || stop() -> [{}]\n",
                              id, wins.load(), fmt::join(stopped, ","));
      std::vector<int64_t> expected;
      if (wins.load() == 1) {
        if (!c.model.Cancel(id)) return NotPending(id);
        expected = c.model.Stop();
      } else {
        expected = c.model.Stop();
        if (c.model.Cancel(id)) return StillPending(id, "stop()");
      }
      return CompareStop(c.model, code, stopped, expected);
    }
    case 5: {
      std::atomic<int> taken{0};
      auto take = [&] {
        if (shared.takeTask() != nullptr) taken.fetch_add(1);
      };
      Racer::Get().Race(take, take);
      const bool m = c.model.TakeTask(id);
      *c.trace += fmt::format("  race: takeTask(#{}) x2 -> {} taken\n", id,
                              taken.load());
      if (taken.load() != (m ? 1 : 0)) {
        return fmt::format("race takeTask(#{}) x2: {} got the task, model {}",
                           id, taken.load(), m ? 1 : 0);
      }
      return "";
    }
    case 6: {
      Racer::Get().Race([&] { c.real.Destroy(); }, cancel_shared);
      *c.trace += fmt::format("  race: cancel(#{}) -> {} || ~Timer()\n", id,
                              wins.load());
      if (wins.load() == 1) {
        if (!c.model.Cancel(id)) return NotPending(id);
        c.model.Destroy();
      } else {
        c.model.Destroy();
        if (c.model.Cancel(id)) return StillPending(id, "~Timer");
      }
      return "";
    }
    default:
      Racer::Get().Race(cancel_shared, cancel_shared);
      break;
  }
  // Kinds 0, 1, 2 and 7: as one cancel() (kind 2 has only one canceller).
  const bool m = c.model.Cancel(id);
  *c.trace +=
      fmt::format("  race({}): cancel(#{}) -> {} won\n", kind, id, wins.load());
  if (wins.load() != (m ? 1 : 0)) {
    return fmt::format("race({}) cancel(#{}): {} calls returned true, model {}",
                       kind, id, wins.load(), m ? 1 : 0);
  }
  return "";
}

// After newTimeout(), newTimeoutAt(), newPeriodic() or reset() of task `id`
// from the test thread, which had run `runs_before` times: lets the worker
// take the change in and, when the deadline had already passed, tells the
// model whether it ran at once: newly, or a worker asleep since before that
// deadline still had its tick to process (as it processes missed ticks).
void SettleAndResolve(RaceContext& c, int64_t id, size_t runs_before) {
  c.real.Settle();  // the worker may have been woken
  if (id < c.model.next_id() && c.model.Overdue(id)) {
    const std::vector<int64_t> ticks = c.real.RunTicks(id);
    const bool ran = ticks.size() > runs_before;
    c.model.ResolveOverdue(id, ran, ran ? ticks.back() : -1);
    *c.trace += fmt::format("     (overdue: {})\n",
                            ran ? "ran at once" : "due at the next tick");
  }
}

std::string RunResetRace(Reader& in, RaceContext& c);

// A period: whole ticks, a tick and a nanosecond, half a tick, one
// nanosecond, a turn of the wheel, times 1-4; or 0, which is refused.
absl::Duration DecodePeriod(uint8_t p, int64_t tick, int64_t wheel) {
  const std::array<int64_t, 8> kPeriods = {
      tick, 2 * tick,     3 * tick, tick + 1, std::max<int64_t>(1, tick / 2),
      1,    wheel * tick, 0};
  return absl::Nanoseconds(kPeriods[p & 7] * (1 + ((p >> 3) & 3)));
}

// The operations on the calls added after the first corpus (opcodes
// 0xF8-0xFF; earlier inputs spell their race opcodes 0xF0-0xF7 only):
//   0  newTimeoutAt(now + delay, action)   [delay] [action]: a clock reading,
//      saturated; negative delays give deadlines in the past
//   1  cancelAll() from the test thread; its count must match
//   2  reset(delay) on a timeout           [timeout] [delay]
//   3  resetAt(now + delay) on a timeout   [timeout] [delay]
//   4  newPeriodic(initial, period)        [initial] [period] [flags]:
//      flags bits 0-1: it cancels itself in run 1-4, unless bit 2 (then only
//      cancel(), cancelAll() or stop() end it); bit 3 throws, bit 4 calls
//      cancelAll(), bit 5 cancels the timeout scheduled before it, bit 6
//      tries stop(), in each run
//   5  a race between two threads (RunResetRace)
//   6  newTimeout(delay, action) with a task that also calls cancelAll()
//                                        [delay] [action]
//   7  reset(delay) on the newest timeout  [delay]
// Compared exactly against the model, as the operations above, except for
// the races and the order within a tick of reset and periodic timeouts
// (tests/model/timer_model.h).
std::string RunLaterOp(int kind, Reader& in, RaceContext& c) {
  TimerModel& model = c.model;
  RealSide& real = c.real;
  const bool needs_timer = kind == 0 || kind == 1 || kind == 4 || kind == 6;
  if (model.destroyed() && needs_timer) return "";  // only handles are left
  switch (kind) {
    case 0: {
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      const TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      const int64_t at = static_cast<int64_t>(std::clamp<__int128>(
          __int128{model.now()} + absl::ToInt64Nanoseconds(delay), INT64_MIN,
          INT64_MAX));
      Code real_code, model_code;
      const int64_t id = real.ScheduleAt(at, action, &real_code);
      model.ScheduleAt(at, action, &model_code);
      *c.trace += fmt::format("  #{} newTimeoutAt({}, {}) -> {}\n", id, at,
                              action.ToString(), CodeName(real_code));
      if (real_code != model_code) {
        return fmt::format("newTimeoutAt #{}: real {} model {}", id,
                           CodeName(real_code), CodeName(model_code));
      }
      SettleAndResolve(c, id, 0);
      return "";
    }
    case 1: {
      const int64_t r = real.CancelAll();
      const int64_t m = model.CancelAll();
      *c.trace += fmt::format("  cancelAll() -> {}\n", r);
      if (r != m) return fmt::format("cancelAll(): real {} model {}", r, m);
      return "";
    }
    case 2:
    case 3:
    case 7: {
      if (model.next_id() == 0) return "";
      const int64_t id =
          kind == 7 ? model.next_id() - 1 : in.Byte() % model.next_id();
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      const size_t runs_before = real.RunTicks(id).size();
      bool r, m;
      if (kind == 3) {
        const int64_t at = static_cast<int64_t>(std::clamp<__int128>(
            __int128{model.now()} + absl::ToInt64Nanoseconds(delay), INT64_MIN,
            INT64_MAX));
        r = real.ResetAt(id, at);
        m = model.ResetAt(id, at);
        *c.trace += fmt::format("  resetAt(#{}, {}) -> {}\n", id, at, r);
      } else {
        r = real.Reset(id, delay);
        m = model.Reset(id, delay);
        *c.trace += fmt::format("  reset(#{}, {}) -> {}\n", id,
                                absl::FormatDuration(delay), r);
      }
      if (r != m) {
        return fmt::format("reset(#{}): real {} model {}", id, r, m);
      }
      // An earlier deadline wakes the worker.
      if (r) SettleAndResolve(c, id, runs_before);
      return "";
    }
    case 4: {
      const absl::Duration initial = DecodeDelay(in.Byte(), c.tick, c.wheel);
      const absl::Duration period = DecodePeriod(in.Byte(), c.tick, c.wheel);
      const uint8_t flags = in.Byte();
      TaskAction action;
      action.periodic_runs = (flags & 4) != 0 ? 0 : (flags & 3) + 1;
      action.throw_after = (flags & 8) != 0;
      action.cancel_all = (flags & 16) != 0;
      action.cancel_previous = (flags & 32) != 0;
      action.try_stop = (flags & 64) != 0;
      Code real_code, model_code;
      const int64_t id =
          real.SchedulePeriodic(initial, period, action, &real_code);
      model.SchedulePeriodic(initial, period, action, &model_code);
      *c.trace += fmt::format("  #{} newPeriodic({}, {}, {}) -> {}\n", id,
                              absl::FormatDuration(initial),
                              absl::FormatDuration(period), action.ToString(),
                              CodeName(real_code));
      if (real_code != model_code) {
        return fmt::format("newPeriodic #{}: real {} model {}", id,
                           CodeName(real_code), CodeName(model_code));
      }
      SettleAndResolve(c, id, 0);
      return "";
    }
    case 5:
      return RunResetRace(in, c);
    default: {  // 6
      const absl::Duration delay = DecodeDelay(in.Byte(), c.tick, c.wheel);
      TaskAction action = DecodeAction(in.Byte(), c.tick, c.wheel);
      action.cancel_all = true;
      Code real_code, model_code;
      const int64_t id = real.Schedule(false, delay, action, &real_code);
      model.Schedule(false, delay, action, &model_code);
      *c.trace += fmt::format("  #{} newTimeout({}, {}) -> {}\n", id,
                              absl::FormatDuration(delay), action.ToString(),
                              CodeName(real_code));
      if (real_code != model_code) {
        return fmt::format("newTimeout #{}: real {} model {}", id,
                           CodeName(real_code), CodeName(model_code));
      }
      SettleAndResolve(c, id, 0);
      return "";
    }
  }
}

// The race operations on the calls added later (opcode 0xFD; the next byte
// picks the kind, bits 0-2, the one after the timeout):
//   0  reset() against cancel() on the one handle object: the cancel() wins
//      iff the timeout was pending (nothing runs meanwhile: the clock stands
//      still); a reset() that returned true came first, and the deadline()
//      is its deadline.
//   1  reset() against reset() with two delays: both return true iff the
//      timeout was pending, and the deadline is one of the two.
//   2  cancelAll() against cancel(): the timeout is cancelled by exactly one
//      of them, and cancelAll() counts every other pending timeout.
//   3  the racer's cancelAll() against the test thread's stop(): each
//      pending timeout ends up cancelled by the one or returned by the other
//      (cancelAll()'s count plus stop()'s list is the pending count), and
//      stop()'s list is in deadline order.
//   5  (bit 3 set) reset() racing the expiry within a tick, on a timer of
//      its own with slack 0: RunWithinTickResetRace().
//   4  (bit 2 set; then an advance byte and a delay byte) the racer's
//      reset() against the test thread's clock advance, with a delay that
//      ends after the advance: false iff the timeout was not pending after
//      the advance (it ran in it, or had ended before); true with the
//      deadline from the clock before or after the advance moved it, and
//      then it does not run in the advance. Compared exactly after that.
// Kinds 2, 3 and 4 act as kind 0 once the timer is destroyed, and kind 4
// also with max_pending set (a child's rejection may depend on where the
// reset() lands) and on a periodic timeout (which may run in the advance
// and still be pending). The delays of
// kinds 0 and 1 are at least a tick, so that no reset() makes the timeout
// overdue, which could let the worker run it in the middle of the race.
absl::Duration RaceDelay(uint8_t byte, const RaceContext& c) {
  return std::max(DecodeDelay(byte, c.tick, c.wheel),
                  absl::Nanoseconds(c.tick));
}

// Kind 5 (bit 3 of the kind byte): reset() racing the expiry within a tick,
// on a timer of its own with a slack of 0 (the model describes the default
// slack only), checked by what holds in every order: no task runs before the
// deadline it holds when it runs (its deadline() then, since a reset() can no
// longer succeed), and each runs exactly once. Up to eight timeouts due
// within the first 255 us of a 1 ms tick; the racer moves each, again and
// again, to a later deadline inside the tick while the test thread steps
// the clock through it. Bytes: the count, then per timeout its delay and
// how far ahead the racer moves it, then the step.
std::string RunWithinTickResetRace(Reader& in, RaceContext& c) {
  constexpr int64_t kTick = 1'000'000;
  constexpr int64_t kUs = 1000;
  const int n = 1 + in.Byte() % 8;
  std::array<int64_t, 8> delay{}, ahead{};
  for (int i = 0; i < n; ++i) {
    delay[i] = (1 + in.Byte()) * kUs;
    ahead[i] = 1 + in.Byte() * 97;
  }
  const int64_t step = (1 + in.Byte() % 32) * kUs;
  races_executed.fetch_add(1, std::memory_order_relaxed);
  auto clock = std::make_shared<ManualClock>();
  TimerOptions options;
  options.tick_duration = absl::Nanoseconds(kTick);
  options.slack = absl::ZeroDuration();
  options.clock = clock;
  std::unique_ptr<Timer> timer = Timer::Create(options).value();
  std::array<std::atomic<int>, 8> runs{};
  std::array<std::atomic<int64_t>, 8> early{};
  std::vector<Timeout> handles;
  for (int i = 0; i < n; ++i) {
    handles.push_back(timer
                          ->newTimeout(
                              [&runs, &early, i, clock](const Timeout& self) {
                                runs[i].fetch_add(1);
                                const int64_t due =
                                    self.deadline().time_since_epoch().count();
                                const int64_t now = clock->NowNanos();
                                if (now < due) early[i] = due - now;
                              },
                              absl::Nanoseconds(delay[i]))
                          .value());
  }
  clock->AwaitIdle();
  Racer::Get().Race(
      [&] {
        for (int64_t t = 0; t < 300 * kUs; t += step) {
          clock->AdvanceAndSettle(absl::Nanoseconds(step));
        }
      },
      [&] {
        for (int round = 0; round < 4; ++round) {
          for (int i = 0; i < n; ++i) {
            handles[i].resetAt(TimePoint(
                std::chrono::nanoseconds(clock->NowNanos() + ahead[i])));
          }
        }
      });
  clock->AdvanceAndSettle(absl::Nanoseconds(2 * kTick));  // the rest run
  *c.trace += fmt::format(
      "  race: within-tick resets of {} timeouts, step {}ns\n", n, step);
  for (int i = 0; i < n; ++i) {
    if (early[i].load() != 0) {
      return fmt::format(
          "race within-tick reset: timeout {} ran {}ns before its deadline", i,
          early[i].load());
    }
    if (runs[i].load() != 1) {
      return fmt::format("race within-tick reset: timeout {} ran {} times", i,
                         runs[i].load());
    }
  }
  return "";
}

std::string RunResetRace(Reader& in, RaceContext& c) {
  const uint8_t kind_byte = in.Byte();
  if (kind_byte & 8) return RunWithinTickResetRace(in, c);
  int kind = (kind_byte & 4) != 0 ? 4 : kind_byte & 3;
  if (c.model.next_id() == 0) return "";
  races_executed.fetch_add(1, std::memory_order_relaxed);
  const int64_t id = in.Byte() % c.model.next_id();
  if (c.model.destroyed() && kind >= 2) kind = 0;
  if (kind == 4 && (!c.unlimited || c.model.IsPeriodic(id))) kind = 0;
  const Timeout& shared = c.real.SharedHandle(id);
  const bool was_pending = c.model.state(id) == TimerModel::State::kPending;
  std::atomic<int> wins{0};
  auto cancel_shared = [&] {
    if (shared.cancel()) wins.fetch_add(1);
  };
  switch (kind) {
    case 0: {
      const absl::Duration delay = RaceDelay(in.Byte(), c);
      std::atomic<bool> reset{false};
      Racer::Get().Race(cancel_shared, [&] { reset = shared.reset(delay); });
      c.real.Settle();
      *c.trace +=
          fmt::format("  race: cancel(#{}) -> {} || reset({}) -> {}\n", id,
                      wins.load(), absl::FormatDuration(delay), reset.load());
      if (wins.load() != (was_pending ? 1 : 0)) {
        return fmt::format(
            "race cancel(#{}) || reset: cancel won {}, but "
            "pending before: {}",
            id, wins.load(), was_pending);
      }
      if (reset.load() && !c.model.Reset(id, delay)) {
        return fmt::format(
            "race: reset(#{}) returned true, model has it not "
            "pending",
            id);
      }
      c.model.Cancel(id);
      return "";
    }
    case 1: {
      const absl::Duration a = RaceDelay(in.Byte(), c);
      const absl::Duration b = RaceDelay(in.Byte(), c);
      std::atomic<bool> ra{false}, rb{false};
      Racer::Get().Race([&] { ra = shared.reset(a); },
                        [&] { rb = shared.reset(b); });
      c.real.Settle();
      const int64_t da = c.model.ResetDeadline(a);
      const int64_t db = c.model.ResetDeadline(b);
      const int64_t got = shared.deadline().time_since_epoch().count();
      *c.trace += fmt::format(
          "  race: reset(#{}, {}) -> {} || reset({}) -> {}, deadline {}\n", id,
          absl::FormatDuration(a), ra.load(), absl::FormatDuration(b),
          rb.load(), got);
      if (ra.load() != was_pending || rb.load() != was_pending) {
        return fmt::format(
            "race reset(#{}) x2: returned {} and {}, pending "
            "before: {}",
            id, ra.load(), rb.load(), was_pending);
      }
      if (!was_pending) return "";
      if (got != da && got != db) {
        return fmt::format("race reset(#{}) x2: deadline {}, neither {} nor {}",
                           id, got, da, db);
      }
      // The other one first, then the one that stuck.
      c.model.ResetAt(id, got == da ? db : da);
      c.model.ResetAt(id, got);
      return "";
    }
    case 2: {
      const int64_t pending = c.model.Pending();
      std::atomic<int64_t> count{-1};
      Racer::Get().Race([&] { count = c.real.CancelAll(); }, cancel_shared);
      *c.trace +=
          fmt::format("  race: cancelAll() -> {} || cancel(#{}) -> {}\n",
                      count.load(), id, wins.load());
      if (wins.load() == 1 && !was_pending) return NotPending(id);
      if (count.load() + wins.load() != pending) {
        return fmt::format(
            "race cancelAll() || cancel(#{}): {} + {} "
            "cancelled, {} were pending",
            id, count.load(), wins.load(), pending);
      }
      if (wins.load() == 1) c.model.Cancel(id);
      const int64_t m = c.model.CancelAll();
      if (m != count.load()) {
        return fmt::format("race cancelAll(): real {} model {}", count.load(),
                           m);
      }
      return "";
    }
    case 4: {
      const int64_t nanos = c.TakeAdvance(in.Byte());
      // Past the advance's end from either clock reading, so that the
      // moved timeout never runs within it, wherever the reset() lands.
      const absl::Duration delay =
          std::max(RaceDelay(in.Byte(), c), absl::Nanoseconds(nanos + c.tick));
      const int64_t before = c.model.ResetDeadline(delay);
      std::atomic<bool> reset{false};
      Racer::Get().Race([&] { c.real.Advance(nanos); },
                        [&] { reset = shared.reset(delay); });
      const std::vector<Event> observed = c.real.events();
      const int64_t got = shared.deadline().time_since_epoch().count();
      *c.trace += fmt::format(
          "  race: reset(#{}, {}) -> {}, deadline {} || advance({}ns)\n", id,
          absl::FormatDuration(delay), reset.load(), got, nanos);
      if (!reset.load()) {
        // After the advance (which may have run it), or it was not pending.
        c.model.Advance(absl::Nanoseconds(nanos), &observed);
        if (c.model.state(id) == TimerModel::State::kPending) {
          return fmt::format(
              "race reset(#{}) || advance: reset() returned "
              "false, the model has it pending after the "
              "advance",
              id);
        }
        return "";
      }
      // Before the worker reached it, with the clock read before or after
      // the advance moved it: either way it does not run in the advance.
      const int64_t after = static_cast<int64_t>(
          std::min<__int128>(__int128{before} + nanos, INT64_MAX));
      if (got != before && got != after) {
        return fmt::format(
            "race reset(#{}) || advance: deadline {}, neither "
            "{} nor {}",
            id, got, before, after);
      }
      if (!c.model.ResetAt(id, got)) {
        return fmt::format(
            "race: reset(#{}) returned true, model has it not "
            "pending",
            id);
      }
      c.model.Advance(absl::Nanoseconds(nanos), &observed);
      return "";
    }
    default: {
      const int64_t pending = c.model.Pending();
      std::atomic<int64_t> count{-1};
      Code code;
      std::vector<int64_t> stopped;
      Racer::Get().Race([&] { stopped = c.real.Stop(&code); },
                        [&] { count = c.real.CancelAll(); });
      *c.trace += fmt::format("  race: cancelAll() -> {} || stop() -> [{}]\n",
                              count.load(), fmt::join(stopped, ","));
      if (count.load() + static_cast<int64_t>(stopped.size()) != pending) {
        return fmt::format(
            "race cancelAll() || stop(): {} cancelled + {} "
            "stopped, {} were pending",
            count.load(), stopped.size(), pending);
      }
      const int64_t m = c.model.CancelAllExcept(stopped);
      if (m != count.load()) {
        return fmt::format(
            "race cancelAll() || stop(): cancelAll() real {} "
            "model {}",
            count.load(), m);
      }
      return CompareStop(c.model, code, stopped, c.model.Stop());
    }
  }
}

}  // namespace

int64_t FuzzOpsExecuted() { return ops_executed.load(); }
int64_t FuzzRacesExecuted() { return races_executed.load(); }

std::string RunFuzzInput(const uint8_t* data, size_t size) {
  InstallLogSinkOnce();
  Reader in(data, size);
  const FuzzConfig config = DecodeConfig(in);
  RealSide real(config);
  if (!real.create_status().ok()) {
    return fmt::format("Timer::Create failed for a valid config {}: {}",
                       config.ToString(), real.create_status().ToString());
  }
  TimerModel model({.tick_nanos = config.tick_nanos,
                    .max_pending = config.max_pending,
                    .clock_start = config.clock_start});
  const int64_t tick = config.tick_nanos;
  const int64_t wheel = real.ticks_per_wheel();
  const int64_t throws_before = task_throws_logged.load();
  int64_t ticks_left = kMaxTicksPerInput;
  std::string trace;

  auto fail = [&](const std::string& what) {
    return fmt::format("MISMATCH: {}\nconfig: {}\noperations:\n{}{}", what,
                       config.ToString(), trace, model.Describe());
  };
  auto check = [&]() -> std::string {
    std::string diff = Compare(model, real, throws_before);
    if (diff.empty()) diff = model.CheckContract();
    return diff;
  };

  RaceContext race{real,        model, tick, wheel, config.max_pending == 0,
                   &ticks_left, &trace};
  for (int op = 0; op < kMaxOps && !in.empty(); ++op) {
    const uint8_t raw = in.Byte();
    ops_executed.fetch_add(1, std::memory_order_relaxed);
    if (raw >= 0xF8) {  // the later calls (RunLaterOp)
      if (std::string d = RunLaterOp(raw & 7, in, race); !d.empty()) {
        return fail(d);
      }
      if (std::string d = check(); !d.empty()) return fail(d);
      continue;
    }
    if (raw >= 0xF0) {  // a race operation (RunRace)
      if (std::string d = RunRace(raw & 7, in, race); !d.empty()) {
        return fail(d);
      }
      if (std::string d = check(); !d.empty()) return fail(d);
      continue;
    }
    const uint8_t opcode = raw & 15;
    if (model.destroyed() && opcode != 6 && opcode != 7 && opcode != 12) {
      continue;  // only handles are left
    }
    switch (opcode) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
      case 13: {  // newTimeout (13: with an empty task)
        const bool empty_task = opcode == 13;
        const absl::Duration delay = DecodeDelay(in.Byte(), tick, wheel);
        const TaskAction action = DecodeAction(in.Byte(), tick, wheel);
        Code real_code, model_code;
        const int64_t id = real.Schedule(empty_task, delay, action, &real_code);
        model.Schedule(empty_task, delay, action, &model_code);
        trace +=
            fmt::format("  #{} newTimeout({}, {}{}) -> {}\n", id,
                        absl::FormatDuration(delay), action.ToString(),
                        empty_task ? ", empty task" : "", CodeName(real_code));
        if (real_code != model_code) {
          return fail(fmt::format("newTimeout #{}: real {} model {}", id,
                                  CodeName(real_code), CodeName(model_code)));
        }
        SettleAndResolve(race, id, 0);
        break;
      }
      case 6:
      case 7:
      case 14: {  // cancel (14: the newest timeout)
        if (model.next_id() == 0) break;
        const int64_t id =
            opcode == 14 ? model.next_id() - 1 : in.Byte() % model.next_id();
        const bool r = real.Cancel(id);
        const bool m = model.Cancel(id);
        trace += fmt::format("  cancel(#{}) -> {}\n", id, r);
        if (r != m) {
          return fail(fmt::format("cancel(#{}): real {} model {}", id, r, m));
        }
        break;
      }
      case 8:
      case 9:
      case 10: {  // advance the clock and settle
        const int64_t nanos = race.TakeAdvance(in.Byte());
        real.Advance(nanos);
        const std::vector<Event> observed = real.events();
        model.Advance(absl::Nanoseconds(nanos), &observed);
        trace += fmt::format("  advance({}ns) -> ticks={}\n", nanos,
                             model.ticks_processed());
        break;
      }
      case 11: {  // stop()
        Code code;
        const std::vector<int64_t> r = real.Stop(&code);
        const std::vector<int64_t> m = model.Stop();
        trace += fmt::format("  stop() -> [{}]\n", fmt::join(r, ","));
        if (std::string d = CompareStop(model, code, r, m); !d.empty()) {
          return fail(d);
        }
        break;
      }
      case 12: {  // takeTask()
        if (model.next_id() == 0) break;
        const int64_t id = in.Byte() % model.next_id();
        const bool r = real.TakeTask(id);
        const bool m = model.TakeTask(id);
        trace += fmt::format("  takeTask(#{}) -> {}\n", id, r);
        if (r != m) {
          return fail(fmt::format("takeTask(#{}): real {} model {}", id, r, m));
        }
        break;
      }
      default: {  // 15: destroy the Timer; handles stay
        real.Destroy();
        model.Destroy();
        trace += "  ~Timer()\n";
        break;
      }
    }
    if (std::string d = check(); !d.empty()) return fail(d);
  }

  // The end: stop, take every task back, destroy. Nothing may be left alive.
  if (!model.destroyed()) {
    Code code;
    const std::vector<int64_t> r = real.Stop(&code);
    const std::vector<int64_t> m = model.Stop();
    trace += fmt::format("  final stop() -> [{}]\n", fmt::join(r, ","));
    if (std::string d = CompareStop(model, code, r, m); !d.empty()) {
      return fail(d);
    }
    for (int64_t id : r) {
      if (real.TakeTask(id) != model.TakeTask(id)) {
        return fail(fmt::format("takeTask(#{}) after the final stop()", id));
      }
    }
    real.Destroy();
    model.Destroy();
  }
  if (std::string d = check(); !d.empty()) return fail(d);
  real.DropHandles();
  for (int64_t id = 0; id < model.next_id(); ++id) {
    if (real.alive(id) != 0) {
      return fail(fmt::format("task {}: captures still alive at the end", id));
    }
  }
  return "";
}

}  // namespace tickwheel::model
