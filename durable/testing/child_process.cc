#include "tickwheel/durable/testing/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace tickwheel::durable::testing {
namespace {

constexpr char kRoleVar[] = "TICKWHEEL_DURABLE_ROLE";

std::map<std::string, RoleMain>& Roles() {
  static auto* roles = new std::map<std::string, RoleMain>;
  return *roles;
}

std::mutex& RolesMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

}  // namespace

bool RegisterRole(const char* name, RoleMain main) {
  std::lock_guard<std::mutex> lock(RolesMutex());
  Roles()[name] = main;
  return true;
}

std::optional<int> RunRoleIfAsked() {
  const char* role = std::getenv(kRoleVar);
  if (role == nullptr || *role == '\0') return std::nullopt;
  RoleMain main = nullptr;
  {
    std::lock_guard<std::mutex> lock(RolesMutex());
    auto it = Roles().find(role);
    if (it != Roles().end()) main = it->second;
  }
  if (main == nullptr) {
    fmt::print(stderr, "unknown {}={}\n", kRoleVar, role);
    return 2;
  }
  return main();
}

absl::StatusOr<pid_t> SpawnRole(std::string_view role, const EnvVars& env,
                                const std::string& output_path) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with(std::string(kRoleVar) + "=")) continue;
    vars.emplace_back(*e);
  }
  vars.push_back(fmt::format("{}={}", kRoleVar, role));
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::InternalError(fmt::format(
        "posix_spawn of /proc/self/exe failed: {}", std::strerror(rc)));
  }
  return pid;
}

absl::StatusOr<int> WaitChild(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) {
      return absl::InternalError(
          fmt::format("waitpid({}) failed: {}", pid, std::strerror(errno)));
    }
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return absl::DeadlineExceededError(
          fmt::format("process {} did not exit within {}; killed", pid,
                      absl::FormatDuration(timeout)));
    }
    usleep(5000);
  }
}

void SignalChild(pid_t pid, int signo) {
  if (pid > 0) kill(pid, signo);
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoll(v, nullptr, 10);
}

std::string EnvString(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::string(v);
}

EventLog::EventLog(const std::string& path)
    : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
}

EventLog::~EventLog() {
  if (fd_ >= 0) close(fd_);
}

void EventLog::Write(std::string_view kind, std::string_view id, int64_t a,
                     int64_t b) {
  const std::string line = fmt::format("{} {} {} {} {}\n", kind, getpid(),
                                       id.empty() ? "-" : id, a, b);
  if (fd_ >= 0) (void)!write(fd_, line.data(), line.size());
}

std::vector<Event> EventLog::Read(const std::string& path) {
  std::ifstream in(path);
  std::vector<Event> events;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written
    std::istringstream fields(line);
    Event e;
    if (fields >> e.kind >> e.pid >> e.id >> e.a >> e.b) {
      events.push_back(std::move(e));
    }
  }
  return events;
}

std::vector<Event> EventLog::Read(const std::string& path,
                                  std::string_view kind) {
  std::vector<Event> all = Read(path);
  std::vector<Event> out;
  for (Event& e : all) {
    if (e.kind == kind) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tickwheel::durable::testing
