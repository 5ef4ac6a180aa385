// tools/bench/durable_bench_args.cc

#include "tools/bench/durable_bench_args.h"

#include <stdlib.h>

#include <cstdlib>

namespace tickwheel::bench {

bool ParseNameValueArgs(
    int argc, char** argv, absl::FunctionRef<void()> usage,
    absl::FunctionRef<bool(const std::string& arg, size_t eq)> set) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg == "--help") {
      usage();
      std::exit(0);
    }
    if (eq == std::string::npos) {
      usage();
      return false;
    }
    if (!set(arg, eq)) return false;
  }
  return true;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string dir = "/tmp/" + prefix + "-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return "/tmp";
  return dir;
}

}  // namespace tickwheel::bench
