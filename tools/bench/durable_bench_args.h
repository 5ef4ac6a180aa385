// tools/bench/durable_bench_args.h
// -----------------------------------------------------------------------------
// What the durable benchmarks (durable_bench, durable_cluster_bench) share
// about running as a program: their --name=value command lines and a temp
// folder for the files they write.

#ifndef TICKWHEEL_TOOLS_BENCH_DURABLE_BENCH_ARGS_H_
#define TICKWHEEL_TOOLS_BENCH_DURABLE_BENCH_ARGS_H_

#include <cstddef>
#include <string>

#include "absl/functional/function_ref.h"

namespace tickwheel::bench {

// Hands each argument of argv[1..argc) to `set(arg, position of '=')`.
// "--help" prints the usage (`usage()`) and exits 0; an argument with no
// '=' prints the usage and returns false, as does a `set` that returns
// false (it says why itself).
bool ParseNameValueArgs(
    int argc, char** argv, absl::FunctionRef<void()> usage,
    absl::FunctionRef<bool(const std::string& arg, size_t eq)> set);

// A new folder /tmp/<prefix>-XXXXXX (mkdtemp), or "/tmp" if none can be made.
std::string MakeTempDir(const std::string& prefix);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_DURABLE_BENCH_ARGS_H_
