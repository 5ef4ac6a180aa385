#include "tests/model/local_fuzz_real_side.h"

#include <chrono>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace tickwheel::model {
namespace {

// newPeriodic() on `timer`, with the policy where T takes one: a template,
// so that the call without a policy is all that is compiled until then.
template <typename T>
absl::StatusOr<Timeout> NewPeriodicOn(T& timer, TimerTask task,
                                      absl::Duration initial,
                                      absl::Duration period, Missed missed) {
  if constexpr (TakesMissedRuns<T>) {
    return timer.newPeriodic(std::move(task), initial, period,
                             static_cast<MissedRuns>(missed));
  } else {
    return timer.newPeriodic(std::move(task), initial, period);
  }
}

}  // namespace

std::string LocalFuzzConfig::ToString() const {
  return fmt::format(
      "tick={}ns ticks_per_wheel={} max_pending={} slack={} clock_start={}",
      base.tick_nanos, base.ticks_per_wheel, base.max_pending,
      zero_slack ? "0" : "one tick", base.clock_start);
}

LocalFuzzConfig DecodeLocalConfig(Reader& in) {
  LocalFuzzConfig c;
  c.base = DecodeConfig(in);
  c.zero_slack = kFuzzLocalSlackBelowTick && c.base.inline_executor;
  c.base.inline_executor = false;
  if (!kFuzzLocalEndOfRange && c.base.clock_start < 0) {
    c.base.clock_start = -(c.base.clock_start + 1);
  }
  return c;
}

// Counts itself in alive_[id] while it exists; moving transfers the count.
class LocalRealSide::Capture {
 public:
  Capture(LocalRealSide* owner, int64_t id) : owner_(owner), id_(id) {
    owner_->alive_[id_].fetch_add(1);
  }
  Capture(Capture&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}
  Capture& operator=(Capture&&) = delete;
  ~Capture() {
    if (owner_ != nullptr) owner_->alive_[id_].fetch_sub(1);
  }

 private:
  LocalRealSide* owner_;
  int64_t id_;
};

LocalRealSide::LocalRealSide(const LocalFuzzConfig& config)
    : clock_(std::make_shared<ManualClock>(config.base.clock_start)) {
  for (auto& a : alive_) a.store(0, std::memory_order_relaxed);
  LocalTimerOptions options;
  options.tick_duration = absl::Nanoseconds(config.base.tick_nanos);
  options.ticks_per_wheel = config.base.ticks_per_wheel;
  options.max_pending_timeouts = config.base.max_pending;
  if (config.zero_slack) options.slack = absl::ZeroDuration();
  options.clock = clock_;
  auto timer = LocalTimer::Create(std::move(options));
  create_status_ = timer.status();
  if (timer.ok()) timer_ = *std::move(timer);
  handles_.resize(kMaxIds);
}

int64_t LocalRealSide::Schedule(bool empty_task, absl::Duration delay,
                                TaskAction action, Code* code) {
  const int64_t id = next_id_++;
  absl::StatusOr<Timeout> t = timer_->newTimeout(
      empty_task ? TimerTask() : MakeTask(id, action), delay);
  *code = CodeOf(t.status());
  if (t.ok()) handles_[id] = *std::move(t);
  return id;
}

int64_t LocalRealSide::ScheduleAt(int64_t at, TaskAction action, Code* code) {
  const int64_t id = next_id_++;
  absl::StatusOr<Timeout> t = timer_->newTimeoutAt(
      MakeTask(id, action), TimePoint(std::chrono::nanoseconds(at)));
  *code = CodeOf(t.status());
  if (t.ok()) handles_[id] = *std::move(t);
  return id;
}

int64_t LocalRealSide::SchedulePeriodic(absl::Duration initial_delay,
                                        absl::Duration period,
                                        TaskAction action, Missed missed,
                                        Code* code) {
  const int64_t id = next_id_++;
  absl::StatusOr<Timeout> t = NewPeriodicOn(*timer_, MakeTask(id, action),
                                            initial_delay, period, missed);
  *code = CodeOf(t.status());
  if (t.ok()) handles_[id] = *std::move(t);
  return id;
}

bool LocalRealSide::ResetAt(int64_t id, int64_t at) {
  return handles_[id].resetAt(TimePoint(std::chrono::nanoseconds(at)));
}

std::optional<int64_t> LocalRealSide::NextWakeup() const {
  const std::optional<TimePoint> at = timer_->nextWakeup();
  if (!at.has_value()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             at->time_since_epoch())
      .count();
}

std::vector<int64_t> LocalRealSide::Stop() {
  std::vector<int64_t> ids;
  for (const Timeout& t : timer_->stop()) {
    int64_t found = -1;
    for (int64_t id = 0; id < next_id_; ++id) {
      if (handles_[id] && handles_[id] == t) found = id;
    }
    ids.push_back(found);
  }
  return ids;
}

TimerTask LocalRealSide::MakeTask(int64_t id, TaskAction action) {
  return [this, action, capture = Capture(this, id), id](const Timeout& self) {
    RunTask(id, action, self);
  };
}

// On the owner thread, inside advance().
void LocalRealSide::RunTask(int64_t id, const TaskAction& action,
                            const Timeout& self) {
  const int64_t advance = timer_->metrics().wakeups + 1;
  const int64_t clock = clock_->NowNanos();
  events_.push_back({Event::Kind::kRan, id, advance, clock, -1, 0});
  if (action.repeat > 0) {
    Code code;
    const int64_t child =
        Schedule(false, action.child_delay, action.Child(), &code);
    events_.push_back({Event::Kind::kChildScheduled, id, advance, clock, child,
                       static_cast<int>(code)});
  }
  if (action.cancel_previous) {
    const bool ok = id > 0 && handles_[id - 1].cancel();
    events_.push_back(
        {Event::Kind::kCancelledOther, id, advance, clock, id - 1, ok ? 1 : 0});
  }
  if (action.cancel_all) {
    const int64_t count = timer_->cancelAll();
    events_.push_back({Event::Kind::kCancelAllFromTask, id, advance, clock, -1,
                       static_cast<int>(count)});
  }
  const int runs = ++runs_[id];
  if (self.isPeriodic() && action.periodic_runs > 0 &&
      runs == action.periodic_runs) {
    const bool ok = self.cancel();
    events_.push_back(
        {Event::Kind::kCancelledSelf, id, advance, clock, id, ok ? 1 : 0});
  }
  if (action.try_stop) {
    // From a task, stop() closes the timer and returns nothing.
    const size_t returned = timer_->stop().size();
    events_.push_back({Event::Kind::kStopFromTask, id, advance, clock, -1,
                       static_cast<int>(returned)});
  }
  if (action.throw_after) throw std::runtime_error("fuzz task throws");
}

}  // namespace tickwheel::model
