#include "tools/bench/netty_bench.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tools/bench/isolation.h"
#include "tools/bench/netty/netty_bench_java.h"

extern char** environ;

namespace tickwheel::bench {
namespace {

// The JVM's flags, none of which changes what is measured: G1 named, as JDK
// 17 picks it on any machine of 2 cores and 2 GB, so that a smaller one does
// not quietly measure another collector; a fixed set of JIT compiler threads
// (JDK 17 ends idle ones, and a thread that ends takes its CPU time out of
// the harness's sum over live threads); the JVM's own warnings on stderr,
// since stdout carries the results.
constexpr const char* kJvmFlags[] = {
    "-XX:+UseG1GC", "-XX:-UseDynamicNumberOfCompilerThreads", "-Xlog:disable",
    "-Xlog:all=warning:stderr"};

struct Exited {
  int status = -1;      // waitpid()'s
  int spawn_error = 0;  // posix_spawnp()'s: ENOENT when not on PATH
  std::string out, err;
};

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

// Starts argv[0] from PATH with `input` on its stdin and collects its stdout
// and stderr until it exits. Its stdin is a socket, so that a program that
// ends before reading it all makes send() fail instead of raising SIGPIPE.
Exited Run(const std::vector<std::string>& argv, const std::string& input) {
  Exited r;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 ||
      pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.spawn_error = errno;
    CloseAll({in[0], in[1], out[0], out[1], err[0], err[1]});
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[1], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  r.spawn_error =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CloseAll({in[1], out[1], err[1]});
  if (r.spawn_error != 0) {
    CloseAll({in[0], out[0], err[0]});
    return r;
  }
  if (input.empty()) in[0] = (close(in[0]), -1);
  pollfd fds[3] = {
      {in[0], POLLOUT, 0}, {out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[3] = {nullptr, &r.out, &r.err};
  size_t sent = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0 || fds[2].fd >= 0) {
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      const ssize_t n = send(fds[0].fd, input.data() + sent,
                             input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
          sent == input.size()) {
        fds[0].fd = (close(fds[0].fd), -1);  // EOF for the reader
      }
    }
    for (int i = 1; i < 3; ++i) {
      if (fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) sinks[i]->append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EINTR))
        fds[i].fd = (close(fds[i].fd), -1);
    }
  }
  CloseAll({fds[0].fd, fds[1].fd, fds[2].fd});
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

bool Succeeded(const Exited& e) {
  return e.spawn_error == 0 && WIFEXITED(e.status) &&
         WEXITSTATUS(e.status) == 0;
}

// Why a program did not succeed, in one line: the spawn error, or its exit
// status and the last line of its stderr.
std::string Failure(const std::string& program, const Exited& e) {
  if (e.spawn_error != 0) {
    return fmt::format("cannot start {}: {}", program,
                       std::strerror(e.spawn_error));
  }
  std::string last = e.err.substr(0, e.err.find_last_not_of('\n') + 1);
  last = last.substr(last.find_last_of('\n') + 1);
  return fmt::format("{} failed (wait status {}): {}", program, e.status, last);
}

void AppendLittleEndian(std::string& s, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int byte = 0; byte < 8; ++byte)
    s.push_back(static_cast<char>((u >> (8 * byte)) & 0xff));
}

}  // namespace

void PrepareNetty(BenchConfig& c) {
  if (!c.Uses("netty")) return;
  const char* install =
      " (tools/setup.sh installs libnetty-java and "
      "default-jdk-headless)";
  if (access(c.netty_jar.c_str(), R_OK) != 0) {
    c.netty_skipped = fmt::format("no {}{}", c.netty_jar, install);
    return;
  }
  std::string dir =
      (std::filesystem::temp_directory_path() / "tickwheel-netty-XXXXXX")
          .string();
  if (mkdtemp(dir.data()) == nullptr) {
    c.netty_skipped = fmt::format("mkdtemp: {}", std::strerror(errno));
    return;
  }
  const std::string source = dir + "/NettyBench.java";
  std::ofstream(source) << kNettyBenchJava;
  const Exited javac =
      Run({"javac", "-cp", c.netty_jar, "-d", dir, source}, "");
  const Exited java = Run({"java", "-version"}, "");
  if (!Succeeded(javac) || !Succeeded(java)) {
    c.netty_skipped =
        (Succeeded(javac) ? Failure("java", java) : Failure("javac", javac)) +
        install;
    std::filesystem::remove_all(dir);
    return;
  }
  c.netty_classes = dir;
}

void CleanUpNetty(const BenchConfig& c) {
  std::error_code ignored;
  if (!c.netty_classes.empty())
    std::filesystem::remove_all(c.netty_classes, ignored);
}

bool Available(const BenchConfig& c, const std::string& impl) {
  return impl != "netty" || !c.netty_classes.empty();
}

RepOutput RunNetty(const BenchConfig& c, const std::string& workload,
                   int64_t variant,
                   const std::vector<std::vector<int64_t>>& delays) {
  if (c.netty_classes.empty()) {
    RepOutput skipped;
    skipped.notes.push_back("not run: " + c.netty_skipped);
    return skipped;
  }
  std::vector<std::string> argv = {"java"};
  argv.insert(argv.end(), std::begin(kJvmFlags), std::end(kJvmFlags));
  // Lab mode's priming, in the JVM's terms: its heap touched at start.
  if (c.prime_mb > 0) argv.push_back("-XX:+AlwaysPreTouch");
  argv.insert(argv.end(),
              {"-cp", c.netty_jar + ":" + c.netty_classes, "NettyBench",
               workload, std::to_string(variant), fmt::format("n={}", c.n),
               fmt::format("warmup={}", c.warmup),
               fmt::format("tick_ns={}", Ms(c.tick_ms).count()),
               fmt::format("depth_calls={}", c.depth_calls),
               fmt::format("far_min_s={}", c.far_min_s),
               fmt::format("idle_settle_s={}", c.idle_settle_s),
               fmt::format("idle_s={}", c.idle_s),
               fmt::format("release_wait_s={}", c.release_wait_s),
               fmt::format("mass_expiry_lead_ms={}", c.mass_expiry_lead_ms),
               fmt::format("burst_lead_ms={}", c.burst_lead_ms),
               fmt::format("burst_delay_ms={}", c.burst_delay_ms)});
  std::string input;
  for (const std::vector<int64_t>& part : delays) {
    input.reserve(input.size() + 8 * (part.size() + 1));
    AppendLittleEndian(input, static_cast<int64_t>(part.size()));
    for (int64_t d : part) AppendLittleEndian(input, d);
  }
  const Exited e = Run(argv, input);
  RepOutput out = ParseRepOutput(e.out);
  if (!Succeeded(e)) {
    out.failures.push_back(Failure("java", e));
  } else if (!e.err.empty()) {
    out.notes.push_back("JVM: " + e.err.substr(0, e.err.find('\n')));
  }
  if (out.values.empty() && out.failures.empty())
    out.failures.push_back("the JVM reported nothing");
  return out;
}

}  // namespace tickwheel::bench
