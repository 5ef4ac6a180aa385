#include "tools/bench/proc_stats.h"

#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace tickwheel::bench {
namespace {

// The number after "<key>:" in a /proc status file, or -1.
int64_t StatusField(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(key + ":"))
      return std::stoll(line.substr(key.size() + 1));
  }
  return -1;
}

std::string FirstLine(const std::filesystem::path& path) {  // or "?"
  std::ifstream in(path);
  std::string line;
  return std::getline(in, line) ? line : "?";
}

std::string Chosen(
    const std::string& modes) {  // "always [madvise] never" -> "madvise"
  const size_t open = modes.find('['), close = modes.find(']');
  return open < close && close != modes.npos
             ? modes.substr(open + 1, close - open - 1)
             : modes;
}

}  // namespace

int64_t ResidentBytes() {
  int64_t kb = StatusField("/proc/self/smaps_rollup", "Rss");  // Linux 4.14+
  if (kb < 0) kb = StatusField("/proc/self/status", "VmRSS");
  return kb < 0 ? -1 : kb * 1024;
}

void TrimMalloc() { malloc_trim(0); }

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t ThreadMinorFaults() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return -1;
  return usage.ru_minflt;
}

int64_t ThreadVoluntarySwitches(int tid) {
  return StatusField(fmt::format("/proc/self/task/{}/status", tid),
                     "voluntary_ctxt_switches");
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  return in >> a >> b >> c ? a + " " + b + " " + c : "?";
}

std::string MemoryEnvironment() {
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/";
  // Free page reporting (Linux 5.7+) is on when a virtio-balloon device (id 5)
  // offers feature bit 5; the kernel command line may set its smallest order.
  std::string reporting = "off";
  std::error_code ec;
  for (const auto& dev :
       std::filesystem::directory_iterator("/sys/bus/virtio/devices", ec)) {
    const std::string features = FirstLine(dev.path() / "features");
    if (FirstLine(dev.path() / "device") == "0x0005" && features.size() > 5 &&
        features[5] == '1') {
      reporting = "on";
    }
  }
  const std::string cmdline = FirstLine("/proc/cmdline"),
                    key = "page_reporting_order=";
  if (const size_t at = cmdline.find(key);
      reporting == "on" && at != cmdline.npos) {
    reporting =
        "from order " + cmdline.substr(at + key.size(),
                                       cmdline.find(' ', at) - at - key.size());
  }
  return fmt::format(
      "THP {} (defrag {}); clocksource {}; free page reporting {}",
      Chosen(FirstLine(thp + "enabled")), Chosen(FirstLine(thp + "defrag")),
      FirstLine(
          "/sys/devices/system/clocksource/clocksource0/current_clocksource"),
      reporting);
}

}  // namespace tickwheel::bench
