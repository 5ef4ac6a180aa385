// durable/testing/redis_server.h
// -----------------------------------------------------------------------------
// Test-only. RedisServer: a redis-server child process of the test's own, on
// 127.0.0.1, on a free port, in a temporary folder, persisting every write
// (appendonly yes, appendfsync always), for the durable timer's tests, the
// benchmark and the demo.
//
//   auto redis = RedisServer::Start().value();
//   DurableTimerOptions o;  o.redis = redis->uri();
//   ...
//   redis->Kill();      // SIGKILL: a crash
//   redis->Restart();   // the same port and folder: what was written is back
//
// It never touches the system's Redis service or port 6379, and stops only
// the process it started, by its pid (SIGTERM and waitpid; SIGKILL on
// Kill()). The folder is removed when the object goes.
//
// The binary is redis-server on PATH (tools/setup.sh installs it), or
// $TICKWHEEL_REDIS_SERVER.
//
// This class is thread-compatible.

#ifndef TICKWHEEL_DURABLE_TESTING_REDIS_SERVER_H_
#define TICKWHEEL_DURABLE_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/durable/redis_connection.h"

namespace tickwheel::durable::testing {

class RedisServer {
 public:
  struct Options {
    // Persist every write before replying (the setting under which durable
    // timers survive a Redis crash).
    bool appendonly = true;
    // How long Start() and Restart() wait for PING.
    absl::Duration ready_timeout = absl::Seconds(20);
    // More "--name value" arguments, e.g. {"--requirepass", "secret"}.
    std::vector<std::string> extra_args;
    // The credentials PING (and Command()) use, with --requirepass or an
    // ACL user (--user): AUTH [username] password.
    std::string username;
    std::string password;
  };

  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start() {
    return Start(Options());
  }

  // Stop() if running, then removes the folder.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  // "tcp://127.0.0.1:<port>".
  std::string uri() const;
  bool running() const { return pid_ > 0; }

  // SIGTERM and waitpid: a clean shutdown.
  absl::Status Stop();
  // SIGKILL and waitpid: a crash.
  absl::Status Kill();
  // Starts it again on the same port and folder, and waits for PING.
  absl::Status Restart();
  // SIGSTOP / SIGCONT: a Redis that hangs (connections stay open, nothing
  // answers).
  absl::Status Pause();
  absl::Status Resume();

  // One command on a connection of the fixture's own (opened on demand).
  absl::StatusOr<internal::RedisReply> Command(
      std::vector<std::string> args, absl::Duration timeout = absl::Seconds(5));
  // Redis's clock (TIME) in microseconds since the Unix epoch.
  absl::StatusOr<int64_t> TimeMicros();

 private:
  RedisServer(Options options, std::string dir)
      : options_(options), dir_(std::move(dir)) {}
  absl::Status Spawn();
  absl::Status WaitReady();
  absl::Status Signal(int signo, bool wait);

  Options options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<internal::RedisConnection> conn_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and
// closed): for a server about to start, or for "nothing listens here".
absl::StatusOr<int> FreePort();

}  // namespace tickwheel::durable::testing

#endif  // TICKWHEEL_DURABLE_TESTING_REDIS_SERVER_H_
