// tools/echo_server: a TCP echo server that closes idle connections with
// tickwheel::IdleTracker (see tools/echo_server_lib.h).
//
//   bazel run //tools:echo_server -- --port=7000 --idle_timeout=10s
//   --tick=100ms # elsewhere: nc 127.0.0.1 7000   (type, see the echo; stop
//   typing, get cut)
//
// Flags (absl duration syntax: 1.5s, 250ms, 2m):
//   --port=N            TCP port on --address (default 7000; 0 = ephemeral)
//   --address=A         IPv4 address to listen on (default 127.0.0.1)
//   --idle_timeout=D    close connections silent for D (default 60s)
//   --tick=D            wheel tick, the firing granularity (default 100ms)
//   --max_buffered=N    echo bytes held per connection before reading from
//                       it pauses (default 1048576)
// Stops on SIGINT/SIGTERM and prints the tracker's and timer's metrics.
//
// One line is printed per closed connection. The I/O loop never writes them
// itself: on_close hands each line to a LineLogger (tools/line_logger.h),
// whose own thread writes stdout, so a terminal or pipe that stops reading
// cannot stall the server. If more than kLogQueueLines lines wait, the
// newest are dropped, and the count of dropped lines is printed at exit.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/idle_tracker.h"
#include "tools/echo_server_lib.h"
#include "tools/line_logger.h"

namespace {

bool ParseFlag(std::string_view arg, std::string_view name,
               std::string* value) {
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

absl::Duration ParseDurationOrDie(const std::string& flag,
                                  const std::string& v) {
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
  return fmt::format(
      "connection #{} from {} closed ({}) after {}: {} bytes "
      "echoed, {} unsent",
      e.id, e.peer, reason, absl::FormatDuration(e.lifetime), e.bytes_echoed,
      e.bytes_unsent);
}

struct Flags {
  int port = 7000;
  std::string address = "127.0.0.1";
  absl::Duration idle_timeout = absl::Seconds(60);
  absl::Duration tick = absl::Milliseconds(100);
  int64_t max_buffered =
      tickwheel::tools::EchoServerOptions().max_buffered_bytes;
};

Flags ParseFlagsOrDie(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "port", &v)) {
      char* end = nullptr;
      f.port = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (*end != '\0' || f.port < 0 || f.port > 65535)
        Usage("bad --port: " + v);
    } else if (ParseFlag(argv[i], "address", &v)) {
      f.address = v;
    } else if (ParseFlag(argv[i], "idle_timeout", &v)) {
      f.idle_timeout = ParseDurationOrDie("idle_timeout", v);
    } else if (ParseFlag(argv[i], "tick", &v)) {
      f.tick = ParseDurationOrDie("tick", v);
    } else if (ParseFlag(argv[i], "max_buffered", &v)) {
      char* end = nullptr;
      f.max_buffered = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || f.max_buffered <= 0)
        Usage("bad --max_buffered: " + v);
    } else {
      Usage(fmt::format("unknown argument '{}'", argv[i]));
    }
  }
  return f;
}

tickwheel::tools::EchoServerOptions ServerOptions(
    const Flags& flags, tickwheel::tools::LineLogger* log) {
  tickwheel::tools::EchoServerOptions o;
  o.address = flags.address;
  o.port = static_cast<uint16_t>(flags.port);
  o.max_buffered_bytes = flags.max_buffered;
  o.on_close = [log](const tickwheel::tools::CloseEvent& e) {
    log->Post(DescribeClose(e));  // never waits for stdout
  };
  return o;
}

// Lines that may wait for stdout (a few hundred KiB); beyond, lines are
// dropped and counted rather than queued without limit.
constexpr size_t kLogQueueLines = 4096;

void PrintTotals(const tickwheel::tools::EchoServerStats& st,
                 const tickwheel::tools::LineLoggerStats& log,
                 const tickwheel::IdleTracker& tracker) {
  fmt::print(
      "accepted={} closed_idle={} closed_by_peer={} "
      "closed_at_shutdown={} closed_on_error={} bytes_echoed={} "
      "max_buffered_bytes={}\n",
      st.accepted, st.closed_idle, st.closed_by_peer, st.closed_at_shutdown,
      st.closed_on_error, st.bytes_echoed, st.max_buffered_bytes);
  fmt::print("log lines: written={} dropped={} failed={}\n", log.written,
             log.dropped, log.failed);
  fmt::print("tracker: {}\ntimer: {}\n", tracker.metrics(),
             tracker.timerMetrics());
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlagsOrDie(argc, argv);

  // SIGINT/SIGTERM are handled by a thread that waits for them, so that no
  // handler runs inside the loop; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tickwheel::IdleTrackerOptions options;
  options.default_idle_timeout = flags.idle_timeout;
  options.tick_duration = flags.tick;
  auto tracker = tickwheel::IdleTracker::Create(options);
  if (!tracker.ok()) {
    fmt::print(stderr, "echo_server: {}\n", tracker.status().ToString());
    return 1;
  }
  // Declared before the server, so destroyed after it: on_close may run
  // until the server is gone.
  auto logger =
      tickwheel::tools::LineLogger::Create(STDOUT_FILENO, kLogQueueLines);
  if (!logger.ok()) {
    fmt::print(stderr, "echo_server: {}\n", logger.status().ToString());
    return 1;
  }
  auto server = tickwheel::tools::EchoServer::Create(
      tracker->get(), ServerOptions(flags, logger->get()));
  if (!server.ok()) {
    fmt::print(stderr, "echo_server: {}\n", server.status().ToString());
    return 1;
  }
  // Before the loop (and the logger's first line): stdio may block here.
  fmt::print("echo_server listening on {}:{}, idle timeout {}, tick {}\n",
             flags.address, (*server)->port(),
             absl::FormatDuration(flags.idle_timeout),
             absl::FormatDuration(flags.tick));
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
  // Writes the lines still queued; only then does stdio write stdout again.
  const tickwheel::tools::LineLoggerStats log_stats = (*logger)->Stop();
  PrintTotals(st, log_stats, **tracker);
  return s.ok() ? 0 : 1;
}
