#include "tools/bench/proc_stats.h"

#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

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

// The first line of `path`, or "?".
std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  return std::getline(in, line) ? line : "?";
}

// The bracketed choice of a sysfs mode file ("always [madvise] never").
std::string Chosen(const std::string& modes) {
  const size_t open = modes.find('['), close = modes.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return modes;
  }
  return modes.substr(open + 1, close - open - 1);
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

std::string MemoryEnvironment() {
  const std::string thp =
      Chosen(FirstLine("/sys/kernel/mm/transparent_hugepage/enabled"));
  const std::string defrag =
      Chosen(FirstLine("/sys/kernel/mm/transparent_hugepage/defrag"));
  const std::string clock = FirstLine(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  // Free page reporting (Linux 5.7+) is on when a virtio-balloon device
  // offers feature bit 5 (VIRTIO_BALLOON_F_REPORTING); the kernel command
  // line may set the smallest block it reports.
  bool reporting = false;
  std::error_code ec;
  const std::filesystem::path devices = "/sys/bus/virtio/devices";
  if (std::filesystem::is_directory(devices, ec)) {
    for (const auto& dev : std::filesystem::directory_iterator(devices, ec)) {
      const std::string id = FirstLine((dev.path() / "device").c_str());
      const std::string features = FirstLine((dev.path() / "features").c_str());
      if (id == "0x0005" && features.size() > 5 && features[5] == '1') {
        reporting = true;
      }
    }
  }
  std::string order;
  const std::string cmdline = FirstLine("/proc/cmdline");
  constexpr std::string_view kOrder = "page_reporting.page_reporting_order=";
  if (const size_t at = cmdline.find(kOrder); at != std::string::npos) {
    const size_t from = at + kOrder.size();
    order = cmdline.substr(from, cmdline.find(' ', from) - from);
  }
  return fmt::format("THP {} (defrag {}); clocksource {}; free page reporting {}",
                     thp, defrag, clock,
                     !reporting        ? std::string("off")
                     : order.empty()   ? std::string("on")
                                       : fmt::format("from order {}", order));
}

int64_t ThreadVoluntarySwitches(int tid) {
  if (tid <= 0) return -1;
  return StatusField(fmt::format("/proc/self/task/{}/status", tid),
                     "voluntary_ctxt_switches");
}

}  // namespace tickwheel::bench
