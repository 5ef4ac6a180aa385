// tools/bench/isolation.h
// -----------------------------------------------------------------------------
// Runs one (workload, implementation, repetition) in a fresh child process:
// the benchmark re-executes itself (/proc/self/exe) with the same flags plus
// --child=<workload>:<impl>:<variant>:<seed>; the child runs that one
// repetition and writes its RepOutput to stdout in a line format; the parent
// parses it. The child's stderr is the parent's.
//
// Why: a run must not inherit the state earlier runs left in the process.
// glibc keeps freed memory, so in one process W4's RSS delta drops to ~0
// bytes per timeout from the second repetition on, and later runs allocate
// from memory that earlier runs scattered (see docs/PERFORMANCE.md). Every
// run in its own process starts every
// implementation from the same state. The runs still alternate between the
// implementations within seconds, so the ratios keep their meaning on a noisy
// machine. Before each child starts, the parent touches and releases
// --prime_mb MiB (default 256), so that the child's fresh memory comes from
// pages the host still backs (on a VM with free page reporting, memory that
// sat free for a few seconds is 4-13x slower to touch first).
//
// Line format, one item per line, tab-separated (tabs and newlines in texts
// become spaces):
//   V <key> <value>      RepOutput::values
//   F <message>          failures
//   N <note>             notes
//   C <name> <value>     counters
//   L <value>            lateness_us, in order

#ifndef TICKWHEEL_TOOLS_BENCH_ISOLATION_H_
#define TICKWHEEL_TOOLS_BENCH_ISOLATION_H_

#include <cstdint>
#include <string>

#include "tools/bench/bench_config.h"
#include "tools/bench/workload_common.h"

namespace tickwheel::bench {

// Parent side: runs the repetition in a child and returns what it reported;
// a child that fails or prints garbage yields a RepOutput with a failure.
RepOutput RunInChild(const BenchConfig& config, const std::string& workload,
                     const std::string& impl, int variant, uint64_t seed);

// Child side: parses config.child, runs the repetition in this process and
// prints it to stdout. Returns the process exit status.
int RunChild(const BenchConfig& config);

// The line format both ways (exposed for tests).
std::string Serialize(const RepOutput& out);
bool Deserialize(const std::string& text, RepOutput& out, std::string& error);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_ISOLATION_H_
