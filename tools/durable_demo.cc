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

int Run() {
  absl::StatusOr<std::unique_ptr<RedisServer>> started = RedisServer::Start();
  if (!started.ok()) {
    fmt::print(stderr, "durable_demo: {}\n", started.status().ToString());
    return 1;
  }
  RedisServer& redis = **started;
  const std::string events = redis.dir() + "/events.log";
  WorkerConfig w;
  w.redis = redis.uri();
  w.keyspace = "demo";
  w.shards = 4;
  w.lease = kLease;
  w.poll_interval = absl::Milliseconds(200);
  w.handler_threads = 2;
  w.max_in_flight = 4;
  w.events = events;
  fmt::print(
      "tickwheel durable timers demo\n"
      "  Redis: its own redis-server on {} (appendonly yes, appendfsync "
      "always), data in {}\n"
      "  two worker processes share the keyspace \"demo\"; lease {}, poll "
      "interval {}\n"
      "  worker-A: 2 handler threads, each reminder takes it 30 s (it will be "
      "killed first)\n"
      "  worker-B: 2 handler threads, each reminder takes it 200 ms\n\n",
      redis.uri(), redis.dir(), absl::FormatDuration(kLease),
      absl::FormatDuration(w.poll_interval));

  std::map<int, std::string> names;
  std::vector<pid_t> pids;
  for (const std::string name : {"worker-A", "worker-B"}) {
    WorkerConfig c = w;
    c.owner = name;
    c.handler_sleep =
        name == "worker-A" ? absl::Seconds(30) : absl::Milliseconds(200);
    absl::StatusOr<pid_t> pid =
        td::testing::SpawnWorker(c, redis.dir() + "/" + name + ".out");
    if (!pid.ok()) {
      fmt::print(stderr, "durable_demo: {}\n", pid.status().ToString());
      return 1;
    }
    names[*pid] = name;
    pids.push_back(*pid);
  }
  const bool ready = td::testing::WaitForEvents(
      events, absl::Seconds(30), [](const std::vector<Event>& e) {
        return std::count_if(e.begin(), e.end(), [](const Event& x) {
                 return x.kind == "ready";
               }) == 2;
      });
  if (!ready) {
    fmt::print(stderr, "durable_demo: the workers did not start\n");
    return 1;
  }

  // The "application": schedules reminders and then goes away.
  td::DurableTimerOptions o = w.Options();
  o.owner = "scheduler";
  auto app = td::DurableTimer::Connect(o);
  if (!app.ok()) {
    fmt::print(stderr, "durable_demo: {}\n", app.status().ToString());
    return 1;
  }
  const absl::Time start = absl::Now();
  Story story(start);
  std::vector<td::ScheduleEntry> reminders;
  for (int i = 1; i <= kReminders; ++i) {
    reminders.push_back({fmt::format("reminder-{}", i),
                         start + absl::Milliseconds(300 + 250 * i),
                         fmt::format("remind customer {}", 1000 + i)});
  }
  if (!(*app)->ScheduleMany(reminders).ok()) return 1;
  story.Say("scheduled {} reminders, due 0.55 s to 2.30 s from now",
            kReminders);

  size_t shown = 0;
  auto show_new_events = [&] {
    const std::vector<Event> all = EventLog::Read(events);
    for (; shown < all.size(); ++shown) {
      const Event& e = all[shown];
      const std::string who = names.count(e.pid) ? names[e.pid] : "?";
      if (e.kind == "start") {
        story.Say("{} starts {} (attempt {})", who, e.id, e.a);
      } else if (e.kind == "end") {
        story.Say("{} finished {}: acknowledged, deleted", who, e.id);
      }
    }
  };

  // Kill worker-A once it is inside a handler.
  const pid_t a = pids[0];
  const bool a_busy = td::testing::WaitForEvents(
      events, absl::Seconds(30), [&](const std::vector<Event>& e) {
        show_new_events();
        return std::any_of(e.begin(), e.end(), [&](const Event& x) {
          return x.kind == "start" && x.pid == a;
        });
      });
  if (!a_busy) return 1;
  absl::SleepFor(absl::Milliseconds(300));
  show_new_events();
  const std::set<std::string> held = ClaimedBy(redis, "worker-A", w.shards);
  std::set<std::string> running;
  for (const Event& e : EventLog::Read(events, "start")) {
    if (e.pid == a) running.insert(e.id);
  }
  td::testing::SignalChild(a, SIGKILL);
  (void)td::testing::WaitChild(a, absl::Seconds(10));
  std::string what;
  for (const std::string& id : held) {
    what += fmt::format(
        "{}{} ({})", what.empty() ? "" : ", ", id,
        running.count(id) ? "inside its handler" : "claimed, not started");
  }
  story.Say("kill -9 worker-A. It held: {}", what.empty() ? "nothing" : what);
  story.Say(
      "worker-B delivers the rest; worker-A's come back when their "
      "{} lease ends",
      absl::FormatDuration(kLease));

  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  int64_t pending = -1;
  while (absl::Now() < give_up) {
    show_new_events();
    pending = (*app)->Pending().value_or(-1);
    if (pending == 0) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  show_new_events();

  std::map<std::string, int> attempts;
  std::map<std::string, std::string> finished_by;
  for (const Event& e : EventLog::Read(events, "start")) {
    attempts[e.id] = std::max(attempts[e.id], static_cast<int>(e.a));
  }
  for (const Event& e : EventLog::Read(events, "end")) {
    finished_by[e.id] = names[e.pid];
  }
  fmt::print("\nWhat happened to each reminder:\n");
  for (const td::ScheduleEntry& r : reminders) {
    fmt::print("  {:11}  delivered {} time(s), acknowledged by {}\n", r.id,
               attempts[r.id],
               finished_by.count(r.id) ? finished_by[r.id] : "nobody (!)");
  }
  const pid_t b = pids[1];
  td::testing::SignalChild(b, SIGTERM);
  (void)td::testing::WaitChild(b, absl::Seconds(30));
  const bool all_done = pending == 0 && finished_by.size() == reminders.size();
  std::string back;
  for (const std::string& id : held) {
    back += fmt::format("{}{} as attempt {}{}", back.empty() ? "" : ", ", id,
                        attempts[id],
                        running.count(id) ? " (it died inside the handler)"
                                          : " (never started)");
  }
  fmt::print(
      "\n{}: every reminder was delivered at least once and acknowledged.\n"
      "worker-A's came back once their leases ended: {}. Pending: {}.\n"
      "Stopped worker-B (SIGTERM) and Redis (by pid); removed {}.\n",
      all_done ? "OK" : "NOT OK", back.empty() ? "none" : back, pending,
      redis.dir());
  return all_done ? 0 : 1;
}

}  // namespace

int main() {
  if (std::optional<int> rc = tickwheel::durable::testing::RunRoleIfAsked()) {
    return *rc;
  }
  return Run();
}
