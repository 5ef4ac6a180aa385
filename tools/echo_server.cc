// tools/echo_server: a TCP echo server that closes idle connections with
// tickwheel::IdleTracker (see tools/echo_server_lib.h).
//
//   bazel run //tools:echo_server -- --port=7000 --idle_timeout=10s --tick=100ms
//   # elsewhere: nc 127.0.0.1 7000   (type, see the echo; stop typing, get cut)
//
// Flags (absl duration syntax: 1.5s, 250ms, 2m):
//   --port=N            TCP port on --address (default 7000; 0 = ephemeral)
//   --address=A         IPv4 address to listen on (default 127.0.0.1)
//   --idle_timeout=D    close connections silent for D (default 60s)
//   --tick=D            wheel tick, the firing granularity (default 100ms)
//   --max_buffered=N    echo bytes held per connection before reading from
//                       it pauses (default 1048576)
// Stops on SIGINT/SIGTERM and prints the tracker's and timer's metrics.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "timer/idle_tracker.h"
#include "tools/echo_server_lib.h"

namespace {

bool ParseFlag(std::string_view arg, std::string_view name, std::string* value) {
  const std::string prefix = fmt::format("--{}=", name);
  if (arg.substr(0, prefix.size()) != prefix) return false;
  *value = std::string(arg.substr(prefix.size()));
  return true;
}

[[noreturn]] void Usage(const std::string& why) {
  fmt::print(stderr,
             "echo_server: {}\nusage: echo_server [--port=7000] "
             "[--address=127.0.0.1] [--idle_timeout=60s] [--tick=100ms] "
             "[--max_buffered=1048576]\n",
             why);
  std::exit(2);
}

absl::Duration ParseDurationOrDie(const std::string& flag, const std::string& v) {
  absl::Duration d;
  if (!absl::ParseDuration(v, &d) || d <= absl::ZeroDuration()) {
    Usage(fmt::format("--{}: not a positive duration: '{}'", flag, v));
  }
  return d;
}

// One line per closed connection, for example
//   connection #3 from 127.0.0.1:53512 closed (idle) after 1.05s: 6 bytes
//   echoed, 0 unsent
std::string DescribeClose(const tickwheel::tools::CloseEvent& e) {
  std::string reason = tickwheel::tools::CloseReasonName(e.reason);
  if (e.reason == tickwheel::tools::CloseReason::kError) {
    reason += fmt::format(": {}", std::strerror(e.error));
  }
  return fmt::format("connection #{} from {} closed ({}) after {}: {} bytes "
                     "echoed, {} unsent",
                     e.id, e.peer, reason, absl::FormatDuration(e.lifetime),
                     e.bytes_echoed, e.bytes_unsent);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 7000;
  std::string address = "127.0.0.1";
  absl::Duration idle_timeout = absl::Seconds(60);
  absl::Duration tick = absl::Milliseconds(100);
  int64_t max_buffered = tickwheel::tools::EchoServerOptions().max_buffered_bytes;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "port", &v)) {
      char* end = nullptr;
      port = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (*end != '\0' || port < 0 || port > 65535) Usage("bad --port: " + v);
    } else if (ParseFlag(argv[i], "address", &v)) {
      address = v;
    } else if (ParseFlag(argv[i], "idle_timeout", &v)) {
      idle_timeout = ParseDurationOrDie("idle_timeout", v);
    } else if (ParseFlag(argv[i], "tick", &v)) {
      tick = ParseDurationOrDie("tick", v);
    } else if (ParseFlag(argv[i], "max_buffered", &v)) {
      char* end = nullptr;
      max_buffered = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || max_buffered <= 0) Usage("bad --max_buffered: " + v);
    } else {
      Usage(fmt::format("unknown argument '{}'", argv[i]));
    }
  }

  // SIGINT/SIGTERM are handled by a thread that waits for them, so that no
  // handler runs inside the loop; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tickwheel::IdleTrackerOptions options;
  options.default_idle_timeout = idle_timeout;
  options.tick_duration = tick;
  auto tracker = tickwheel::IdleTracker::Create(options);
  if (!tracker.ok()) {
    fmt::print(stderr, "echo_server: {}\n", tracker.status().ToString());
    return 1;
  }
  tickwheel::tools::EchoServerOptions server_options;
  server_options.address = address;
  server_options.port = static_cast<uint16_t>(port);
  server_options.max_buffered_bytes = max_buffered;
  server_options.on_close = [](const tickwheel::tools::CloseEvent& e) {
    fmt::print("{}\n", DescribeClose(e));
    std::fflush(stdout);
  };
  auto server = tickwheel::tools::EchoServer::Create(tracker->get(), server_options);
  if (!server.ok()) {
    fmt::print(stderr, "echo_server: {}\n", server.status().ToString());
    return 1;
  }
  fmt::print("echo_server listening on {}:{}, idle timeout {}, tick {}\n",
             address, (*server)->port(), absl::FormatDuration(idle_timeout),
             absl::FormatDuration(tick));
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    (*server)->Stop();
  });
  absl::Status s = (*server)->Run();
  if (!s.ok()) {
    fmt::print(stderr, "echo_server: {}\n", s.ToString());
    kill(getpid(), SIGTERM);  // release the waiter
  }
  waiter.join();
  const tickwheel::tools::EchoServerStats st = (*server)->stats();
  server->reset();
  fmt::print("accepted={} closed_idle={} closed_by_peer={} "
             "closed_at_shutdown={} closed_on_error={} bytes_echoed={} "
             "max_buffered_bytes={}\n",
             st.accepted, st.closed_idle, st.closed_by_peer,
             st.closed_at_shutdown, st.closed_on_error, st.bytes_echoed,
             st.max_buffered_bytes);
  fmt::print("tracker: {}\ntimer: {}\n", (*tracker)->metrics(),
             (*tracker)->timerMetrics());
  return s.ok() ? 0 : 1;
}
