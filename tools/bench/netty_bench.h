// tools/bench/netty_bench.h
// -----------------------------------------------------------------------------
// The "netty" timer: Netty 4.1's io.netty.util.HashedWheelTimer, the timer
// tickwheel's design follows, measured in a JVM of its own. A Java timer
// cannot be a BenchTimer; instead each workload's run for it starts one JVM
// that makes the whole repetition (tools/bench/netty/NettyBench.java, which
// mirrors the C++ workloads) and reads its results back, so a netty cell is
// measured in its own process as every other cell is.
//
// The harness's source is compiled into the bench binary (a genrule makes it
// a header), so a copied binary still finds it. PrepareNetty() writes it to a
// fresh temporary folder and compiles it there with javac, once per
// invocation and before any run, so that no measured JVM compiles anything
// but its own JIT's work. Without java, javac or the Netty jar the netty
// cells stay empty and the report notes why; nothing fails.

#ifndef TICKWHEEL_TOOLS_BENCH_NETTY_BENCH_H_
#define TICKWHEEL_TOOLS_BENCH_NETTY_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/bench_config.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// Compiles the harness against config.netty_jar, when config uses netty:
// sets config.netty_classes to the folder, or config.netty_skipped to why
// not (no jar, no javac on PATH, a compile error).
void PrepareNetty(BenchConfig& config);

// Removes the folder PrepareNetty() made, if any.
void CleanUpNetty(const BenchConfig& config);

// Whether `impl` can run in this invocation: every timer but netty always,
// netty once PrepareNetty() has compiled its harness.
bool Available(const BenchConfig& config, const std::string& impl);

// One repetition of `workload` (its kName) and `variant` (Variant::value) on
// Netty: starts `java` from PATH with the sizes of `config` as arguments and
// `delays` (the workload's, one part per producer) on its stdin, and parses
// what it prints as a child's output (ParseRepOutput()). A JVM that fails
// or prints nothing yields a failure.
RepOutput RunNetty(const BenchConfig& config, const std::string& workload,
                   int64_t variant,
                   const std::vector<std::vector<int64_t>>& delays);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_NETTY_BENCH_H_
