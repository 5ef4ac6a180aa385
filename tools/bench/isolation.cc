#include "tools/bench/isolation.h"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/runners.h"

extern char** environ;

namespace tickwheel::bench {
namespace {

std::string Clean(std::string s) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string SelfPath() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  return std::string(buf.data(), static_cast<size_t>(n));
}

// Touches `mb` MiB of fresh memory, advised for huge pages as the node pool
// of tickwheel maps its chunks, and gives it back, right before a child
// starts: the guest kernel then hands the child pages it has just freed,
// which the host still backs, instead of pages that sat free long enough
// to be reported to the host (and must be faulted in there again). Without
// it, W1 and W7 repetitions fall into a slow mode that depends on what ran
// a few seconds earlier (docs/PERFORMANCE.md, "Why the two modes").
void PrimeMemory(int64_t mb) {
  if (mb <= 0) return;
  const size_t bytes = static_cast<size_t>(mb) << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // best effort
  madvise(p, bytes, MADV_HUGEPAGE);
  for (size_t off = 0; off < bytes; off += 4096) {
    static_cast<volatile char*>(p)[off] = 1;
  }
  munmap(p, bytes);
}

RepOutput Failed(std::string message) {
  RepOutput out;
  out.failures.push_back(std::move(message));
  return out;
}

}  // namespace

std::string Serialize(const RepOutput& out) {
  std::string s;
  for (const auto& [k, v] : out.values) s += fmt::format("V\t{}\t{:.17g}\n", Clean(k), v);
  for (const std::string& f : out.failures) s += fmt::format("F\t{}\n", Clean(f));
  for (const std::string& n : out.notes) s += fmt::format("N\t{}\n", Clean(n));
  for (const auto& [k, v] : out.counters) s += fmt::format("C\t{}\t{:.17g}\n", Clean(k), v);
  for (double l : out.lateness_us) s += fmt::format("L\t{:.17g}\n", l);
  return s;
}

bool Deserialize(const std::string& text, RepOutput& out, std::string& error) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
      f.push_back(line.substr(start, tab - start));
    }
    f.push_back(line.substr(start));
    char* end = nullptr;
    auto number = [&](const std::string& s) {
      const double v = std::strtod(s.c_str(), &end);
      return (end == s.c_str() || *end != '\0') ? (error = "bad number: " + s, 0.0) : v;
    };
    if (f[0] == "V" && f.size() == 3) {
      out.values[f[1]] = number(f[2]);
    } else if (f[0] == "F" && f.size() == 2) {
      out.failures.push_back(f[1]);
    } else if (f[0] == "N" && f.size() == 2) {
      out.notes.push_back(f[1]);
    } else if (f[0] == "C" && f.size() == 3) {
      out.counters[f[1]] = number(f[2]);
    } else if (f[0] == "L" && f.size() == 2) {
      out.lateness_us.push_back(number(f[1]));
    } else {
      error = "unexpected line: " + line;
    }
    if (!error.empty()) return false;
  }
  return true;
}

RepOutput RunInChild(const BenchConfig& config, const std::string& workload,
                     const std::string& impl, int variant, uint64_t seed) {
  const std::string self = SelfPath();
  if (self.empty()) return Failed("cannot read /proc/self/exe");
  std::vector<std::string> args = {self};
  for (const std::string& a : config.args) args.push_back(a);
  args.push_back(fmt::format("--child={}:{}:{}:{}", workload, impl, variant, seed));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return Failed("pipe() failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  PrimeMemory(config.prime_mb);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return Failed(fmt::format("posix_spawn failed: error {}", rc));
  }
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Failed(fmt::format("child process for {} {} ended with {} {}", workload,
                              impl, WIFEXITED(status) ? "exit status" : "signal",
                              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status)));
  }
  RepOutput out;
  std::string error;
  if (!Deserialize(text, out, error)) return Failed("child output: " + error);
  return out;
}

int RunChild(const BenchConfig& config) {
  // "<workload>:<impl>:<variant>:<seed>"
  std::vector<std::string> parts;
  std::string rest = config.child;
  for (size_t colon; (colon = rest.find(':')) != std::string::npos;) {
    parts.push_back(rest.substr(0, colon));
    rest = rest.substr(colon + 1);
  }
  parts.push_back(rest);
  RunnerFn run = parts.size() == 4 ? Runner(parts[1]) : nullptr;
  if (run == nullptr) {
    fmt::print(stderr, "bench: bad --child={}\n", config.child);
    return 2;
  }
  const RepOutput out = run(parts[0], config, std::atoi(parts[2].c_str()),
                            std::strtoull(parts[3].c_str(), nullptr, 10));
  const std::string text = Serialize(out);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace tickwheel::bench
