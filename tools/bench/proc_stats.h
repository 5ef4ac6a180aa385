// tools/bench/proc_stats.h
// -----------------------------------------------------------------------------
// What the benchmark reads about its process from Linux: resident memory, CPU
// time of the process and of a thread, a thread's minor page faults and
// voluntary context switches (the Asio model's wake-ups), the load average
// and the memory environment.
// Thread-safe; -1 (or "?") when /proc cannot be read.

#ifndef TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_
#define TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_

#include <cstdint>
#include <string>

namespace tickwheel::bench {

// Rss from /proc/self/smaps_rollup (it walks the page tables), else VmRSS
// (lazily synced counters that can lag after other threads' page faults).
int64_t ResidentBytes();

// glibc malloc_trim(0): free heap pages go back to the kernel, so that an RSS
// delta measures live memory. Call it on both sides of one.
void TrimMalloc();

double ProcessCpuSeconds();   // user + system, every thread (getrusage)
int64_t ThreadCpuNanos();     // the calling thread (CLOCK_THREAD_CPUTIME_ID)
int64_t ThreadMinorFaults();  // the calling thread's (getrusage RUSAGE_THREAD)
int64_t ThreadVoluntarySwitches(int tid);  // a thread of this process
std::string LoadAverage();                 // "1.02 0.80 0.55" (1, 5, 15 min)

// What decides the cost of fresh memory and of a clock read, in one line:
// "THP madvise (defrag madvise); clocksource tsc; free page reporting from
// order 11". With free page reporting (a VM's guest handing free memory back
// to its host), a page may first have to be faulted in again on the host, so
// first touches come in two speeds (docs/BENCHMARKS.md).
std::string MemoryEnvironment();

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_
