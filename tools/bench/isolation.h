// tools/bench/isolation.h
// -----------------------------------------------------------------------------
// Each run in a fresh process: the parent, which never runs a workload
// itself, forks a child per run; the child makes the run, writes its
// RepOutput to a pipe ("V <name> <value>", "F <failure>", "N <note>", one a
// line) and exits. A run must not inherit what earlier runs left behind:
// allocators keep freed memory, so in one process the memory workload reads
// next to nothing from its second repetition on, and later runs allocate from
// memory earlier runs scattered. --isolate=0 runs everything in the parent.
//
// Lab mode (--prime_mb > 0): right before each fork the parent touches and
// releases that much memory, on small pages. On a VM whose guest
// reports free memory to its host, memory that sat free for a few seconds is
// several times slower to touch first; priming hands the child pages the
// host still backs. No user's process is primed, so it is off by default.

#ifndef TICKWHEEL_TOOLS_BENCH_ISOLATION_H_
#define TICKWHEEL_TOOLS_BENCH_ISOLATION_H_

#include <functional>
#include <string>

#include "tools/bench/bench_config.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// A child's output, "V\t<name>\t<value>", "F\t<failure>", "N\t<note>" one a
// line; a line of another kind becomes a failure. The Netty harness
// (netty_bench.h) writes the same.
RepOutput ParseRepOutput(const std::string& text);

// Runs `run` as configured (in a child by default); a child that fails or
// reports garbage yields a RepOutput with a failure.
RepOutput RunIsolated(const BenchConfig& config,
                      const std::function<RepOutput()>& run);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_ISOLATION_H_
