#include "tools/bench/proc_stats.h"

#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <fstream>
#include <string>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

// The number after "`key`:" in a /proc status file, or -1.
int64_t StatusField(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() &&
        line[key.size()] == ':') {
      return std::stoll(line.substr(key.size() + 1));
    }
  }
  return -1;
}

}  // namespace

int64_t ResidentBytes() {
  // smaps_rollup sums the page tables; VmRSS comes from counters that the
  // kernel updates lazily per CPU and can lag by megabytes after another
  // thread's (huge) page faults. Fall back to VmRSS on kernels before 4.14.
  int64_t kb = StatusField("/proc/self/smaps_rollup", "Rss");
  if (kb < 0) kb = StatusField("/proc/self/status", "VmRSS");
  return kb < 0 ? -1 : kb * 1024;
}

bool ResetPeakResident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t PeakResidentBytes() {
  const int64_t kb = StatusField("/proc/self/status", "VmHWM");
  return kb < 0 ? -1 : kb * 1024;
}

void TrimMalloc() { malloc_trim(0); }

double ProcessCpuSeconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

int64_t ThreadCpuNanos() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "?";
  return a + " " + b + " " + c;
}

int64_t ThreadVoluntarySwitches(int tid) {
  if (tid <= 0) return -1;
  return StatusField(fmt::format("/proc/self/task/{}/status", tid),
                     "voluntary_ctxt_switches");
}

}  // namespace tickwheel::bench
