// tools/durable_demo.cc: durable timers surviving a crash, in ten seconds.
//
// Starts a redis-server of its own (a free port, a temporary folder, every
// write persisted), then two worker processes that share one keyspace of
// durable timers: worker-A, whose handler is slow (it will be killed inside
// it), and worker-B, whose handler takes 200 ms. It schedules eight
// reminders due within two seconds, kills worker-A with SIGKILL while it
// runs some and holds others claimed ahead of their deadlines, and shows
// worker-B delivering everything -- worker-A's timers once their lease
// ends, as attempt 2. Then it stops worker-B and Redis, by their pids.
//
//   tools/durable_demo.sh     (or: bazel run //tools:durable_demo)

#include <signal.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/child_process.h"
#include "tickwheel/durable/testing/redis_server.h"
#include "tickwheel/durable/testing/worker_role.h"

namespace {

namespace td = tickwheel::durable;
using td::testing::Event;
using td::testing::EventLog;
using td::testing::RedisServer;
using td::testing::WorkerConfig;

constexpr int kReminders = 8;
constexpr absl::Duration kLease = absl::Seconds(3);

class Story {
 public:
  explicit Story(absl::Time start) : start_(start) {}
  template <typename... Args>
  void Say(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print("[{:5.2f}s] {}\n", absl::ToDoubleSeconds(absl::Now() - start_),
               fmt::format(format, std::forward<Args>(args)...));
    std::fflush(stdout);
  }

 private:
  absl::Time start_;
};

// The timers `owner` has claimed, from the :state records in Redis.
std::set<std::string> ClaimedBy(RedisServer& redis, const std::string& owner,
                                int shards) {
  std::set<std::string> ids;
  for (int s = 0; s < shards; ++s) {
    auto all = redis.Command({"HGETALL", fmt::format("{{demo:{}}}:state", s)});
    if (!all.ok()) continue;
    for (size_t i = 0; i + 1 < all->elements.size(); i += 2) {
      const std::string& record = all->elements[i + 1].str;
      // "<version>:<attempt>:<deadline>:<bytes>:<owner>"
      size_t colon = 0;
      for (int k = 0; k < 4 && colon != std::string::npos; ++k) {
        colon = record.find(':', colon == 0 ? 0 : colon + 1);
      }
      if (colon != std::string::npos && record.substr(colon + 1) == owner) {
        ids.insert(all->elements[i].str);
      }
    }
  }
  return ids;
}

// The demo, one step per member function, in the order Run() takes them.
// A step that returns false has ended the demo (exit status 1), after saying
// why on stderr where there was something to say.
class Demo {
 public:
  explicit Demo(RedisServer& redis);

  // The header: what runs where, and with which settings.
  void Introduce() const;
  // Spawns worker-A (slow handler) and worker-B (fast handler) and waits
  // until both report "ready".
  bool StartWorkers();
  // Connects as the "application" and schedules the reminders. The story's
  // clock starts here.
  bool ScheduleReminders();
  // Waits until worker-A is inside a handler, gives it a moment to claim
  // more, kills it with SIGKILL and says what it held.
  bool KillWorkerAInsideAHandler();
  // Shows the deliveries as they happen until nothing is pending, or for at
  // most 30 s.
  void WaitUntilDelivered();
  // Prints what happened to each reminder, stops worker-B, and sums up;
  // true when every reminder was acknowledged and nothing is pending.
  bool Report();

 private:
  // Prints the "start" and "end" events not shown yet.
  void ShowNewEvents();

  RedisServer& redis_;
  const std::string events_;  // the workers' shared event log
  WorkerConfig config_;       // both workers' settings but owner and handler
  std::map<int, std::string> names_;  // pid -> "worker-A" or "worker-B"
  pid_t worker_a_ = -1, worker_b_ = -1;
  std::unique_ptr<td::DurableTimer> app_;
  std::optional<Story> story_;  // set when the reminders are scheduled
  std::vector<td::ScheduleEntry> reminders_;
  size_t shown_ = 0;               // events ShowNewEvents() has printed
  std::set<std::string> held_;     // worker-A's claims when it was killed
  std::set<std::string> running_;  // those of them it had started
  int64_t pending_ = -1;           // at the end of WaitUntilDelivered()
};

Demo::Demo(RedisServer& redis)
    : redis_(redis), events_(redis.dir() + "/events.log") {
  config_.redis = redis.uri();
  config_.keyspace = "demo";
  config_.shards = 4;
  config_.lease = kLease;
  config_.poll_interval = absl::Milliseconds(200);
  config_.handler_threads = 2;
  config_.max_in_flight = 4;
  config_.events = events_;
}

void Demo::Introduce() const {
  fmt::print(
      "tickwheel durable timers demo\n"
      "  Redis: its own redis-server on {} (appendonly yes, appendfsync "
      "always), data in {}\n"
      "  two worker processes share the keyspace \"demo\"; lease {}, poll "
      "interval {}\n"
      "  worker-A: 2 handler threads, each reminder takes it 30 s (it will be "
      "killed first)\n"
      "  worker-B: 2 handler threads, each reminder takes it 200 ms\n\n",
      redis_.uri(), redis_.dir(), absl::FormatDuration(kLease),
      absl::FormatDuration(config_.poll_interval));
}

bool Demo::StartWorkers() {
  for (const std::string name : {"worker-A", "worker-B"}) {
    WorkerConfig c = config_;
    c.owner = name;
    c.handler_sleep =
        name == "worker-A" ? absl::Seconds(30) : absl::Milliseconds(200);
    absl::StatusOr<pid_t> pid =
        td::testing::SpawnWorker(c, redis_.dir() + "/" + name + ".out");
    if (!pid.ok()) {
      fmt::print(stderr, "durable_demo: {}\n", pid.status().ToString());
      return false;
    }
    names_[*pid] = name;
    if (name == "worker-A") {
      worker_a_ = *pid;
    } else {
      worker_b_ = *pid;
    }
  }
  const bool ready = td::testing::WaitForEvents(
      events_, absl::Seconds(30), [](const std::vector<Event>& e) {
        return std::count_if(e.begin(), e.end(), [](const Event& x) {
                 return x.kind == "ready";
               }) == 2;
      });
  if (!ready) {
    fmt::print(stderr, "durable_demo: the workers did not start\n");
    return false;
  }
  return true;
}

bool Demo::ScheduleReminders() {
  // The "application": schedules reminders and then goes away.
  td::DurableTimerOptions o = config_.Options();
  o.owner = "scheduler";
  absl::StatusOr<std::unique_ptr<td::DurableTimer>> app =
      td::DurableTimer::Connect(o);
  if (!app.ok()) {
    fmt::print(stderr, "durable_demo: {}\n", app.status().ToString());
    return false;
  }
  app_ = *std::move(app);
  const absl::Time start = absl::Now();
  story_.emplace(start);
  for (int i = 1; i <= kReminders; ++i) {
    reminders_.push_back({fmt::format("reminder-{}", i),
                          start + absl::Milliseconds(300 + 250 * i),
                          fmt::format("remind customer {}", 1000 + i)});
  }
  if (!app_->ScheduleMany(reminders_).ok()) return false;
  story_->Say("scheduled {} reminders, due 0.55 s to 2.30 s from now",
              kReminders);
  return true;
}

void Demo::ShowNewEvents() {
  const std::vector<Event> all = EventLog::Read(events_);
  for (; shown_ < all.size(); ++shown_) {
    const Event& e = all[shown_];
    const std::string who = names_.count(e.pid) ? names_[e.pid] : "?";
    if (e.kind == "start") {
      story_->Say("{} starts {} (attempt {})", who, e.id, e.a);
    } else if (e.kind == "end") {
      story_->Say("{} finished {}: acknowledged, deleted", who, e.id);
    }
  }
}

bool Demo::KillWorkerAInsideAHandler() {
  const pid_t a = worker_a_;
  const bool a_busy = td::testing::WaitForEvents(
      events_, absl::Seconds(30), [&](const std::vector<Event>& e) {
        ShowNewEvents();
        return std::any_of(e.begin(), e.end(), [&](const Event& x) {
          return x.kind == "start" && x.pid == a;
        });
      });
  if (!a_busy) return false;
  absl::SleepFor(absl::Milliseconds(300));
  ShowNewEvents();
  held_ = ClaimedBy(redis_, "worker-A", config_.shards);
  for (const Event& e : EventLog::Read(events_, "start")) {
    if (e.pid == a) running_.insert(e.id);
  }
  td::testing::SignalChild(a, SIGKILL);
  (void)td::testing::WaitChild(a, absl::Seconds(10));
  std::string what;
  for (const std::string& id : held_) {
    what += fmt::format(
        "{}{} ({})", what.empty() ? "" : ", ", id,
        running_.count(id) ? "inside its handler" : "claimed, not started");
  }
  story_->Say("kill -9 worker-A. It held: {}", what.empty() ? "nothing" : what);
  story_->Say(
      "worker-B delivers the rest; worker-A's come back when their "
      "{} lease ends",
      absl::FormatDuration(kLease));
  return true;
}

void Demo::WaitUntilDelivered() {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (absl::Now() < give_up) {
    ShowNewEvents();
    pending_ = app_->Pending().value_or(-1);
    if (pending_ == 0) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ShowNewEvents();
}

bool Demo::Report() {
  std::map<std::string, int> attempts;
  std::map<std::string, std::string> finished_by;
  for (const Event& e : EventLog::Read(events_, "start")) {
    attempts[e.id] = std::max(attempts[e.id], static_cast<int>(e.a));
  }
  for (const Event& e : EventLog::Read(events_, "end")) {
    finished_by[e.id] = names_[e.pid];
  }
  fmt::print("\nWhat happened to each reminder:\n");
  for (const td::ScheduleEntry& r : reminders_) {
    fmt::print("  {:11}  delivered {} time(s), acknowledged by {}\n", r.id,
               attempts[r.id],
               finished_by.count(r.id) ? finished_by[r.id] : "nobody (!)");
  }
  td::testing::SignalChild(worker_b_, SIGTERM);
  (void)td::testing::WaitChild(worker_b_, absl::Seconds(30));
  const bool all_done =
      pending_ == 0 && finished_by.size() == reminders_.size();
  std::string back;
  for (const std::string& id : held_) {
    back += fmt::format("{}{} as attempt {}{}", back.empty() ? "" : ", ", id,
                        attempts[id],
                        running_.count(id) ? " (it died inside the handler)"
                                           : " (never started)");
  }
  fmt::print(
      "\n{}: every reminder was delivered at least once and acknowledged.\n"
      "worker-A's came back once their leases ended: {}. Pending: {}.\n"
      "Stopped worker-B (SIGTERM) and Redis (by pid); removed {}.\n",
      all_done ? "OK" : "NOT OK", back.empty() ? "none" : back, pending_,
      redis_.dir());
  return all_done;
}

int Run() {
  absl::StatusOr<std::unique_ptr<RedisServer>> started = RedisServer::Start();
  if (!started.ok()) {
    fmt::print(stderr, "durable_demo: {}\n", started.status().ToString());
    return 1;
  }
  // Declared after `started`: the application's connection closes before
  // Redis stops.
  Demo demo(**started);
  demo.Introduce();
  if (!demo.StartWorkers() || !demo.ScheduleReminders() ||
      !demo.KillWorkerAInsideAHandler()) {
    return 1;
  }
  demo.WaitUntilDelivered();
  return demo.Report() ? 0 : 1;
}

}  // namespace

int main() {
  if (std::optional<int> rc = tickwheel::durable::testing::RunRoleIfAsked()) {
    return *rc;
  }
  return Run();
}
