#include "tests/model/fuzz_real_side.h"

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace tickwheel::model {
namespace {

std::atomic<int64_t> task_throws_logged{0};

}  // namespace

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

int64_t TaskThrowsLogged() { return task_throws_logged.load(); }

// Counts itself in alive_[id] while it exists; moving transfers the count.
class RealSide::Capture {
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

RealSide::RealSide(const FuzzConfig& config)
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

int64_t RealSide::ScheduleOn(Timer* timer, bool empty_task,
                             absl::Duration delay, TaskAction action,
                             Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  absl::StatusOr<Timeout> t =
      timer->newTimeout(empty_task ? TimerTask() : MakeTask(id, action), delay);
  *code = CodeOf(t.status());
  if (t.ok()) SetHandle(id, *std::move(t));
  return id;
}

int64_t RealSide::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  absl::StatusOr<Timeout> t = timer_->newTimeoutAt(
      MakeTask(id, action), TimePoint(std::chrono::nanoseconds(at)));
  *code = CodeOf(t.status());
  if (t.ok()) SetHandle(id, *std::move(t));
  return id;
}

// The model restates the timer's missed-run policy: the same three, in the
// same order, and the same bound on a burst.
static_assert(
    static_cast<int>(MissedRuns::kSkip) == static_cast<int>(Missed::kSkip) &&
    static_cast<int>(MissedRuns::kBurst) == static_cast<int>(Missed::kBurst) &&
    static_cast<int>(MissedRuns::kDelay) == static_cast<int>(Missed::kDelay));
static_assert(kMaxBurstRuns == kModelMaxBurst);

int64_t RealSide::SchedulePeriodic(absl::Duration initial_delay,
                                   absl::Duration period, TaskAction action,
                                   std::optional<Missed> missed, Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  absl::StatusOr<Timeout> t =
      missed.has_value()
          ? timer_->newPeriodic(MakeTask(id, action), initial_delay, period,
                                static_cast<MissedRuns>(*missed))
          : timer_->newPeriodic(MakeTask(id, action), initial_delay, period);
  *code = CodeOf(t.status());
  if (t.ok()) SetHandle(id, *std::move(t));
  return id;
}

bool RealSide::ResetAt(int64_t id, int64_t at) {
  return Handle(id).resetAt(TimePoint(std::chrono::nanoseconds(at)));
}

std::vector<int64_t> RealSide::RunTicks(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ticks;
  for (const Event& e : events_) {
    if (e.kind == Event::Kind::kRan && e.id == id) ticks.push_back(e.tick);
  }
  return ticks;
}

std::vector<int64_t> RealSide::Stop(Code* code) {
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

std::vector<Event> RealSide::events() {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

Timeout RealSide::Handle(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return id >= 0 && id < kMaxIds ? handles_[id] : Timeout();
}

const Timeout& RealSide::SharedHandle(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return handles_[id];
}

void RealSide::DropHandles() {
  std::vector<Timeout> handles;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handles.swap(handles_);
  }
}

TimerTask RealSide::MakeTask(int64_t id, TaskAction action) {
  return [this, action, capture = Capture(this, id), id](const Timeout& self) {
    RunTask(id, action, self);
  };
}

void RealSide::SetHandle(int64_t id, Timeout t) {
  std::lock_guard<std::mutex> lock(mu_);
  handles_[id] = std::move(t);
}

void RealSide::Record(Event e) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

void RealSide::RunTask(int64_t id, const TaskAction& action,
                       const Timeout& self) {
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
    Record({Event::Kind::kCancelledOther, id, tick, clock, id - 1, ok ? 1 : 0});
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

}  // namespace tickwheel::model
