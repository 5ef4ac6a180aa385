#include "tests/model/fuzz_real_side.h"

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace tickwheel::model {
namespace {

std::atomic<int64_t> task_throws_logged{0};

// The model restates the timer's missed-run policy: the same three, in the
// same order, and the same bound on a burst.
static_assert(
    static_cast<int>(MissedRuns::kSkip) == static_cast<int>(Missed::kSkip) &&
    static_cast<int>(MissedRuns::kBurst) == static_cast<int>(Missed::kBurst) &&
    static_cast<int>(MissedRuns::kDelay) == static_cast<int>(Missed::kDelay));
static_assert(kMaxBurstRuns == kModelMaxBurst);

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
    : local_kind_(config.kind == TimerKind::kLocal),
      clock_(std::make_shared<ManualClock>(config.clock_start)) {
  for (auto& a : alive_) a.store(0, std::memory_order_relaxed);
  for (auto& r : runs_) r.store(0, std::memory_order_relaxed);
  handles_.resize(kMaxIds);
  auto configure = [&](auto& options) {
    options.tick_duration = absl::Nanoseconds(config.tick_nanos);
    options.ticks_per_wheel = config.ticks_per_wheel;
    options.max_pending_timeouts = config.max_pending;
    options.clock = clock_;
  };
  if (local_kind_) {
    LocalTimerOptions options;
    configure(options);
    if (config.zero_slack) options.slack = absl::ZeroDuration();
    auto timer = LocalTimer::Create(std::move(options));
    create_status_ = timer.status();
    if (timer.ok()) local_ = *std::move(timer);
    return;
  }
  TimerOptions options;
  configure(options);
  options.thread_name = "tickwheel-fuzz";
  if (config.inline_executor) {
    options.task_executor = [](absl::AnyInvocable<void()> run) { run(); };
  }
  auto timer = Timer::Create(std::move(options));
  create_status_ = timer.status();
  if (timer.ok()) timer_ = *std::move(timer);
}

int64_t RealSide::Record(int64_t id, absl::StatusOr<Timeout> t, Code* code) {
  *code = CodeOf(t.status());
  if (t.ok()) SetHandle(id, *std::move(t));
  return id;
}

int64_t RealSide::Schedule(bool empty_task, absl::Duration delay,
                           TaskAction action, Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  TimerTask task = empty_task ? TimerTask() : MakeTask(id, action);
  return Record(
      id, Visit([&](auto& t) { return t.newTimeout(std::move(task), delay); }),
      code);
}

int64_t RealSide::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  TimerTask task = MakeTask(id, action);
  const TimePoint when{std::chrono::nanoseconds(at)};
  return Record(
      id, Visit([&](auto& t) { return t.newTimeoutAt(std::move(task), when); }),
      code);
}

int64_t RealSide::SchedulePeriodic(absl::Duration initial_delay,
                                   absl::Duration period, TaskAction action,
                                   std::optional<Missed> missed, Code* code) {
  const int64_t id = next_id_.fetch_add(1);
  TimerTask task = MakeTask(id, action);
  return Record(id, Visit([&](auto& t) -> absl::StatusOr<Timeout> {
                  if constexpr (TakesMissedRuns<decltype(t)>) {
                    if (missed.has_value()) {
                      return t.newPeriodic(std::move(task), initial_delay,
                                           period,
                                           static_cast<MissedRuns>(*missed));
                    }
                  }
                  return t.newPeriodic(std::move(task), initial_delay, period);
                }),
                code);
}

bool RealSide::ResetAt(int64_t id, int64_t at) {
  return Handle(id).resetAt(TimePoint(std::chrono::nanoseconds(at)));
}

int64_t RealSide::Advance(int64_t nanos) {
  if (local_kind_) {
    AdvanceClock(nanos);
    return local_->advance();
  }
  const int64_t before = static_cast<int64_t>(events().size());
  clock_->AdvanceAndSettle(absl::Nanoseconds(nanos));
  std::lock_guard<std::mutex> lock(mu_);
  int64_t ran = 0;
  for (size_t i = before; i < events_.size(); ++i) {
    ran += events_[i].kind == Event::Kind::kRan ? 1 : 0;
  }
  return ran;
}

std::vector<int64_t> RealSide::RunTicks(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ticks;
  for (const Event& e : events_) {
    if (e.kind == Event::Kind::kRan && e.id == id) ticks.push_back(e.tick);
  }
  return ticks;
}

std::optional<int64_t> RealSide::NextWakeup() const {
  const std::optional<TimePoint> at = local_->nextWakeup();
  if (!at.has_value()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             at->time_since_epoch())
      .count();
}

std::vector<int64_t> RealSide::Stop(Code* code) {
  std::vector<Timeout> stopped;
  if (local_kind_) {
    *code = Code::kOk;
    stopped = local_->stop();
  } else {
    absl::StatusOr<std::vector<Timeout>> r = timer_->stop();
    *code = CodeOf(r.status());
    if (r.ok()) stopped = *std::move(r);
  }
  std::vector<int64_t> ids;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Timeout& t : stopped) {
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
  // A Timer's task reaches its timer through its handle (timer()); a
  // LocalTimer's runs on its owner thread, which holds it.
  Timer* timer = local_kind_ ? nullptr : self.timer();
  const int64_t tick =
      local_kind_ ? local_->metrics().wakeups + 1 : timer->metrics().ticks;
  const int64_t clock = clock_->NowNanos();
  Record({Event::Kind::kRan, id, tick, clock, -1, 0});
  if (action.repeat > 0) {
    Code code;
    const int64_t child_id = next_id_.fetch_add(1);
    TimerTask child = MakeTask(child_id, action.Child());
    const absl::Duration delay = action.child_delay;
    Record(child_id,
           local_kind_ ? local_->newTimeout(std::move(child), delay)
                       : timer->newTimeout(std::move(child), delay),
           &code);
    Record({Event::Kind::kChildScheduled, id, tick, clock, child_id,
            static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = Handle(id - 1).cancel();
    Record({Event::Kind::kCancelledOther, id, tick, clock, id - 1, ok ? 1 : 0});
  }
  if (action.cancel_all) {
    const int64_t count =
        local_kind_ ? local_->cancelAll() : timer->cancelAll();
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
    // A Timer refuses (the status); a LocalTimer closes and returns nothing
    // (how many it returned).
    const int result = local_kind_
                           ? static_cast<int>(local_->stop().size())
                           : static_cast<int>(CodeOf(timer->stop().status()));
    Record({Event::Kind::kStopFromTask, id, tick, clock, -1, result});
  }
  if (action.throw_after) throw std::runtime_error("fuzz task throws");
}

}  // namespace tickwheel::model
