#include "tools/bench/isolation.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

std::string Serialize(const RepOutput& out) {
  const auto clean = [](std::string s) {
    for (char& c : s) c = (c == '\t' || c == '\n') ? ' ' : c;
    return s;
  };
  std::string s;
  for (const auto& [k, v] : out.values)
    s += fmt::format("V\t{}\t{:.17g}\n", clean(k), v);
  for (const std::string& f : out.failures) s += "F\t" + clean(f) + "\n";
  for (const std::string& n : out.notes) s += "N\t" + clean(n) + "\n";
  return s;
}

// Lab mode: touches `mb` MiB on small pages, as tickwheel's node pool maps
// its chunks, and gives it back, so the next process gets pages the host
// still backs.
void PrimeMemory(int64_t mb) {
  const size_t bytes = static_cast<size_t>(mb) << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // best effort
  madvise(p, bytes, MADV_NOHUGEPAGE);
  for (size_t off = 0; off < bytes; off += 4096)
    static_cast<volatile char*>(p)[off] = 1;
  munmap(p, bytes);
}

}  // namespace

RepOutput ParseRepOutput(const std::string& text) {
  RepOutput out;
  std::istringstream in(text);
  for (std::string kind, rest;
       std::getline(in, kind, '\t') && std::getline(in, rest);) {
    const size_t tab = rest.find('\t');
    char* end = nullptr;
    const double v =
        tab == rest.npos ? 0 : std::strtod(rest.c_str() + tab + 1, &end);
    if (kind == "V" && end != nullptr && *end == '\0') {
      out.values[rest.substr(0, tab)] = v;
    } else if (kind == "F" || kind == "N") {
      (kind == "F" ? out.failures : out.notes).push_back(rest);
    } else {
      out.failures.push_back("garbled child output: " + kind + " " + rest);
    }
  }
  return out;
}

RepOutput RunIsolated(const BenchConfig& config,
                      const std::function<RepOutput()>& run) {
  if (!config.isolate) return run();
  if (config.prime_mb > 0) PrimeMemory(config.prime_mb);
  int fds[2];
  if (pipe(fds) != 0) return ParseRepOutput("F\tpipe() failed\n");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string text = Serialize(run());
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0 && errno != EINTR) _exit(1);
      done += n > 0 ? static_cast<size_t>(n) : 0;
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[65536];
  for (ssize_t n; pid > 0 && (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(fds[0]);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (pid <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return ParseRepOutput(
        fmt::format("F\tthe child process failed (status {})\n", status));
  }
  return ParseRepOutput(text);
}

}  // namespace tickwheel::bench
