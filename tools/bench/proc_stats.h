// tools/bench/proc_stats.h
// -----------------------------------------------------------------------------
// What the benchmark reads about its own process from Linux: resident memory
// (W2, W4), CPU time (W1, W2, W5, W6), the load average and the memory
// environment (report header) and a thread's voluntary context switches (the
// wake-up count of the Asio model's io thread, W5).
//
// All functions are thread-safe; they return -1 when /proc cannot be read.

#ifndef TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_
#define TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_

#include <cstdint>
#include <string>

namespace tickwheel::bench {

// Resident memory in bytes: Rss from /proc/self/smaps_rollup (exact, it walks
// the page tables), else VmRSS from /proc/self/status (kept by lazily synced
// counters that can lag after other threads' page faults).
int64_t ResidentBytes();

// Resets the process's peak RSS (VmHWM) to the current RSS by writing "5" to
// /proc/self/clear_refs (Linux 4.0+). False if the kernel refused.
bool ResetPeakResident();

// VmHWM from /proc/self/status, in bytes: the peak RSS since the last
// ResetPeakResident() (or since the process started).
int64_t PeakResidentBytes();

// Gives free heap pages back to the kernel (glibc malloc_trim(0), every
// arena), so that a later ResidentBytes() measures live memory rather than
// what malloc kept from earlier workloads. Call it on both sides of an RSS
// delta.
void TrimMalloc();

// User + system CPU time of the whole process so far (getrusage), seconds.
double ProcessCpuSeconds();

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), nanoseconds.
int64_t ThreadCpuNanos();

// The first three fields of /proc/loadavg ("1.02 0.80 0.55"), or "?".
std::string LoadAverage();

// What decides the cost of fresh memory and of a clock read here, in one
// line: the transparent huge page mode and defrag policy, the clock source,
// and whether the guest hands free memory back to its hypervisor (free page
// reporting, virtio-balloon): e.g. "THP madvise (defrag madvise);
// clocksource tsc; free page reporting from order 11". With reporting on,
// a page the kernel gives a process may first have to be faulted in again on
// the host, so first-touch costs come in two modes (docs/PERFORMANCE.md).
std::string MemoryEnvironment();

// voluntary_ctxt_switches of thread `tid` of this process, from
// /proc/self/task/<tid>/status.
int64_t ThreadVoluntarySwitches(int tid);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_PROC_STATS_H_
