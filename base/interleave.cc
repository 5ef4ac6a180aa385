#include "tickwheel/base/interleave.h"

#ifdef TICKWHEEL_INTERLEAVE

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace tickwheel::internal {
namespace {

uint64_t Seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("TICKWHEEL_INTERLEAVE_SEED");
    return env != nullptr ? std::strtoull(env, nullptr, 10) : uint64_t{1};
  }();
  return seed;
}

// One xorshift64* sequence per thread; threads are numbered in the order
// they first reach a point.
uint64_t Next() {
  static std::atomic<uint64_t> threads{0};
  thread_local uint64_t state =
      (Seed() * 0x9E3779B97F4A7C15ULL) ^
      ((threads.fetch_add(1, std::memory_order_relaxed) + 1) *
       0xBF58476D1CE4E5B9ULL) ^
      1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

// Read once, on the first call: the environment does not change while the
// threads under test run, and a function-local static is initialised once
// whichever thread gets there first.
bool Enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("TICKWHEEL_INTERLEAVE");
    return env != nullptr && env[0] != '\0' &&
           !(env[0] == '0' && env[1] == '\0');
  }();
  return enabled;
}

}  // namespace

bool InterleavePointsOn() noexcept { return Enabled(); }

void InterleavePoint() noexcept {
  if (!Enabled()) return;
  const uint64_t r = Next();
  if ((r & 63) == 0) {
    timespec ts{0, static_cast<long>(1000 * (1 + ((r >> 6) & 63)))};
    nanosleep(&ts, nullptr);
  } else if ((r & 7) == 0) {
    sched_yield();
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERLEAVE
