// durable/testing/child_process.h
// -----------------------------------------------------------------------------
// Test-only. Processes for the multi-process tests, the benchmark and the
// demo: the program spawns itself (posix_spawn of /proc/self/exe, never
// fork() from a process that runs threads) with TICKWHEEL_DURABLE_ROLE set,
// and the child runs that role instead of its main program.
//
//   TICKWHEEL_DURABLE_ROLE_MAIN(my_role) { ...; return 0; }   // registers it
//   int main(...) { if (auto rc = RunRoleIfAsked()) return *rc; ... }
//   pid_t pid = SpawnRole("my_role", {{"KEY", "value"}},
//   "/tmp/out.log").value();
//
// EventLog: a file that several processes append one-line events to (one
// write() per line, O_APPEND), which the parent reads back; it survives a
// SIGKILL of the writer.
//
// These functions are thread-safe; an EventLog object is thread-safe.

#ifndef TICKWHEEL_DURABLE_TESTING_CHILD_PROCESS_H_
#define TICKWHEEL_DURABLE_TESTING_CHILD_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tickwheel::durable::testing {

using RoleMain = int (*)();

// Registers `main` under `name`; for static registration (the macro below).
bool RegisterRole(const char* name, RoleMain main);

#define TICKWHEEL_DURABLE_ROLE_MAIN(name)                                 \
  static int TickwheelRole_##name();                                      \
  [[maybe_unused]] static const bool kTickwheelRoleRegistered_##name =    \
      ::tickwheel::durable::testing::RegisterRole(#name,                  \
                                                  &TickwheelRole_##name); \
  static int TickwheelRole_##name()

// With TICKWHEEL_DURABLE_ROLE set: runs that role and returns its exit code
// (2 for an unknown role). Without: nullopt.
std::optional<int> RunRoleIfAsked();

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Spawns /proc/self/exe with the role and `env` added to this process's
// environment, its stdout and stderr appended to `output_path`.
absl::StatusOr<pid_t> SpawnRole(std::string_view role, const EnvVars& env,
                                const std::string& output_path);

// Waits up to `timeout` for `pid` to exit and reaps it: its wait status.
// DeadlineExceeded: it did not; then it is killed (SIGKILL) and reaped.
absl::StatusOr<int> WaitChild(pid_t pid, absl::Duration timeout);

// Sends `signo` to `pid` (a child this process spawned).
void SignalChild(pid_t pid, int signo);

// An environment variable as an int, or `fallback`.
int64_t EnvInt(const char* name, int64_t fallback);
std::string EnvString(const char* name, std::string fallback = "");

struct Event {
  std::string kind;  // "ready", "start", "end", "stopped", ...
  int pid = 0;
  std::string id;
  int64_t a = 0;  // meaning per kind (the attempt, for "start" and "end")
  int64_t b = 0;  // meaning per kind
};

class EventLog {
 public:
  explicit EventLog(const std::string& path);  // opens for appending
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // "<kind> <pid> <id> <a> <b>\n" in one write(); `id` without spaces.
  void Write(std::string_view kind, std::string_view id, int64_t a = 0,
             int64_t b = 0);

  // Every complete line of `path`.
  static std::vector<Event> Read(const std::string& path);
  // Those of `kind`.
  static std::vector<Event> Read(const std::string& path,
                                 std::string_view kind);

 private:
  int fd_;
};

// Polls `path` until `done(events)` holds or `timeout` passes; returns
// whether it held.
template <typename Pred>
bool WaitForEvents(const std::string& path, absl::Duration timeout, Pred done);

}  // namespace tickwheel::durable::testing

#include <thread>  // for the template below

template <typename Pred>
bool tickwheel::durable::testing::WaitForEvents(const std::string& path,
                                                absl::Duration timeout,
                                                Pred done) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (done(EventLog::Read(path))) return true;
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

#endif  // TICKWHEEL_DURABLE_TESTING_CHILD_PROCESS_H_
