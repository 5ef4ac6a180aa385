// tests/pool_test_util.h
// -----------------------------------------------------------------------------
// Helpers for the node pool's tests: cells allocated on a thread that then
// exits (so that none stays in its cache), freed the same way, the minor
// page faults the calling thread has taken, and the process's resident
// memory.

#ifndef TICKWHEEL_TESTS_POOL_TEST_UTIL_H_
#define TICKWHEEL_TESTS_POOL_TEST_UTIL_H_

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace tickwheel::testing {

// `n` cells of Pool, each filled with `fill`, allocated on a thread that
// then exits.
template <typename Pool>
std::vector<void*> AllocateOnAThread(size_t n, int fill, size_t cell_size) {
  std::vector<void*> cells;
  std::thread([&] {
    for (size_t i = 0; i < n; ++i) {
      cells.push_back(Pool::Allocate());
      std::memset(cells.back(), fill, cell_size);
    }
  }).join();
  return cells;
}

// Frees `cells` on a thread that then exits: every one is back in the depot.
template <typename Pool>
void FreeOnAThread(const std::vector<void*>& cells) {
  std::thread([&] {
    for (void* p : cells) Pool::Free(p);
  }).join();
}

// Minor page faults of the calling thread so far.
inline int64_t ThreadMinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Resident bytes of this process (/proc/self/statm); 0 if unreadable.
inline int64_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return int64_t{resident} * sysconf(_SC_PAGESIZE);
}

// Whether the page faults of a thread and the process's resident memory
// come from the code under test alone: sanitizers fault their shadow memory
// in on first access too, and keep their own allocator's memory resident.
#if defined(ADDRESS_SANITIZER) || defined(THREAD_SANITIZER)
inline constexpr bool kFaultsAreOurs = false;
#else
inline constexpr bool kFaultsAreOurs = true;
#endif
inline constexpr bool kResidentMemoryIsOurs = kFaultsAreOurs;

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_POOL_TEST_UTIL_H_
