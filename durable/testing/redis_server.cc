#include "tickwheel/durable/testing/redis_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"

extern char** environ;

namespace tickwheel::durable::testing {
namespace {

int64_t Now() { return RealClock::MonotonicNanos(); }

// The last 2,000 bytes of the server's log in `dir`.
std::string LogTail(const std::string& dir) {
  std::ifstream in(dir + "/redis.log");
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

std::string RedisBinary() {
  if (const char* env = std::getenv("TICKWHEEL_REDIS_SERVER")) return env;
  return "redis-server";
}

std::string TempRoot() {
  if (const char* t = std::getenv("TEST_TMPDIR"); t != nullptr && *t != '\0') {
    return t;
  }
  return std::filesystem::temp_directory_path().string();
}

std::string ReadTail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.size() > 2000) text = text.substr(text.size() - 2000);
  return text;
}

}  // namespace

absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError(
        fmt::format("binding 127.0.0.1:0 failed: {}", std::strerror(errno)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(
    Options options) {
  std::string pattern = TempRoot() + "/tw-redis-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        fmt::format("mkdtemp({}) failed: {}", pattern, std::strerror(errno)));
  }
  std::unique_ptr<RedisServer> server(new RedisServer(options, pattern));
  // A port that another process takes between FreePort() and the server's
  // bind makes the server exit: try another.
  absl::Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    server->port_ = *port;
    last = server->Spawn();
    if (last.ok()) last = server->WaitReady();
    if (last.ok()) return server;
    (void)server->Kill();
  }
  return last;
}

RedisServer::~RedisServer() {
  conn_.reset();
  if (running()) (void)Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string RedisServer::uri() const {
  return fmt::format("tcp://127.0.0.1:{}", port_);
}

absl::Status RedisServer::Spawn() {
  const std::string binary = RedisBinary();
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {binary,
                                   "--bind",
                                   "127.0.0.1",
                                   "--port",
                                   port,
                                   "--dir",
                                   dir_,
                                   "--save",
                                   "",
                                   "--appendonly",
                                   options_.appendonly ? "yes" : "no",
                                   "--appendfsync",
                                   "always",
                                   "--daemonize",
                                   "no",
                                   "--protected-mode",
                                   "yes",
                                   "--loglevel",
                                   "warning",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  args.insert(args.end(), options_.extra_args.begin(),
              options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = dir_ + "/stdout.log";
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, binary.c_str(), &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::FailedPreconditionError(
        fmt::format("cannot start {}: {}; install it (tools/setup.sh installs "
                    "redis-server) or set TICKWHEEL_REDIS_SERVER",
                    binary, std::strerror(rc)));
  }
  pid_ = pid;
  return absl::OkStatus();
}

absl::Status RedisServer::WaitReady() {
  const int64_t deadline =
      Now() + absl::ToInt64Nanoseconds(options_.ready_timeout);
  internal::RedisEndpoint endpoint{"127.0.0.1", port_, ""};
  while (Now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(fmt::format(
          "redis-server on port {} exited at once: {}{}", port_,
          ReadTail(dir_ + "/redis.log"), ReadTail(dir_ + "/stdout.log")));
    }
    absl::StatusOr<std::unique_ptr<internal::RedisConnection>> c =
        internal::RedisConnection::Open(endpoint, options_.username,
                                        options_.password, Now() + 500'000'000);
    if (c.ok()) {
      const internal::RedisCommand ping = {"PING"};
      std::vector<internal::RedisReply> replies;
      if ((*c)->Pipeline({&ping, 1}, &replies, Now() + 500'000'000).ok() &&
          replies[0].str == "PONG") {
        conn_ = *std::move(c);
        return absl::OkStatus();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return absl::DeadlineExceededError(
      fmt::format("redis-server on port {} did not answer PING in {}", port_,
                  absl::FormatDuration(options_.ready_timeout)));
}

absl::Status RedisServer::Signal(int signo, bool wait) {
  if (pid_ <= 0)
    return absl::FailedPreconditionError("redis-server is not running");
  if (kill(pid_, signo) != 0) {
    return absl::InternalError(fmt::format("kill({}, {}) failed: {}", pid_,
                                           signo, std::strerror(errno)));
  }
  if (wait) {
    // A clean shutdown may wait for replicas (shutdown-timeout) or hang on a
    // loaded machine: after a bound, a SIGKILL, with the server's log on
    // stderr to say why, so that no test hangs on its fixture.
    int status = 0;
    const int64_t give_up = Now() + 30'000'000'000;
    for (;;) {
      const pid_t r = waitpid(pid_, &status, signo == SIGKILL ? 0 : WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (r == 0 && Now() >= give_up) {
        std::fprintf(stderr,
                     "redis-server %d did not stop within 30 s of SIGTERM; "
                     "SIGKILL. Its log ends:\n%s\n",
                     static_cast<int>(pid_), LogTail(dir_).c_str());
        kill(pid_, SIGKILL);
        signo = SIGKILL;
      } else if (r == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    pid_ = -1;
    conn_.reset();
  }
  return absl::OkStatus();
}

absl::Status RedisServer::Stop() { return Signal(SIGTERM, true); }
absl::Status RedisServer::Kill() { return Signal(SIGKILL, true); }
absl::Status RedisServer::Pause() { return Signal(SIGSTOP, false); }
absl::Status RedisServer::Resume() { return Signal(SIGCONT, false); }

absl::Status RedisServer::Restart() {
  if (running()) return absl::FailedPreconditionError("still running");
  if (absl::Status s = Spawn(); !s.ok()) return s;
  return WaitReady();
}

absl::StatusOr<internal::RedisReply> RedisServer::Command(
    std::vector<std::string> args, absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<internal::RedisConnection>> c =
        internal::RedisConnection::Open({"127.0.0.1", port_, ""},
                                        options_.username, options_.password,
                                        deadline);
    if (!c.ok()) return c.status();
    conn_ = *std::move(c);
  }
  std::vector<internal::RedisReply> replies;
  if (absl::Status s = conn_->Pipeline({&args, 1}, &replies, deadline);
      !s.ok()) {
    return s;
  }
  return std::move(replies[0]);
}

absl::StatusOr<int64_t> RedisServer::TimeMicros() {
  absl::StatusOr<internal::RedisReply> r = Command({"TIME"});
  if (!r.ok()) return r.status();
  if (r->elements.size() != 2) return absl::InternalError("bad TIME reply");
  return r->elements[0].AsInt() * 1'000'000 + r->elements[1].AsInt();
}

}  // namespace tickwheel::durable::testing
