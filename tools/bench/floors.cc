// tools/bench/floors.cc
// -----------------------------------------------------------------------------
// What this machine allows, measured with no timer in the way: the floors
// under issue #6's targets. Each probe does the least work a timer could do
// for the operation a target times, so a target below its floor cannot be met
// on this machine by any timer, and the gap between a tickwheel figure and
// its floor is what the timer itself costs.
//
//   clock       one clock_gettime(CLOCK_MONOTONIC): newTimeout() must read the
//               clock once to turn a delay into a deadline that is never early.
//   rmw, cas    one uncontended atomic fetch_add / compare_exchange: a
//               multi-producer timer needs at least one per newTimeout() (the
//               hand-off to the worker); tickwheel has two (the pending count
//               and the hand-off).
//   fresh node  writing one 48-byte node into memory never touched before
//               (2 MiB chunks with MADV_HUGEPAGE, as the node pool maps them):
//               the page-fault share of every newTimeout() that grows the
//               pending set (target 1's timed calls do).
//   warm node   the same writes again, the memory now faulted in.
//   stream 1M   reading and writing 1,000,000 48-byte nodes that are not in
//               the cache: the memory traffic alone of expiring a burst of a
//               million (target 5).
//   random 1M   the same in a random order, prefetching 8 nodes ahead as the
//               wheel's sweep does: a bucket fed by random delays (W6,
//               target 6).
//   scaling     aggregate rate of 2 threads over 1 thread, for pure
//               arithmetic and for first-touching fresh memory: the ceiling of
//               target 7 when producers grow the pending set.
//
//   first touch (only with --first_touch=S) microseconds per 2 MiB to fault
//               in fresh huge-page memory, twice per repetition: after S
//               seconds of idle, and right after this process touched and
//               released 128 MiB. On a VM whose guest reports free memory to
//               its host (free page reporting), the first is several times
//               the second: the host must back the pages again. That is the
//               slow mode of W1 and W7 repetitions without the bench's
//               --prime_mb (docs/PERFORMANCE.md, "Why the two modes").
//
// Every probe runs --reps times; the table shows median [min-max]. Flags:
// --reps=R (default 5), --first_touch=S (seconds of idle, > 2 to see the
// effect; adds R * S seconds), --quick (tiny sizes, for the smoke test: the
// figures then mean nothing).

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/proc_stats.h"

namespace {

int64_t Now(clockid_t id = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

constexpr size_t kChunk = size_t{2} << 20;
constexpr size_t kNode = 48;

// `bytes` (a multiple of kChunk) of fresh, 2 MiB-aligned anonymous memory
// advised for huge pages, as timer/cell_pool.cc maps node chunks.
char* MapFresh(size_t bytes) {
  void* raw = mmap(nullptr, bytes + kChunk, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::fprintf(stderr, "floors: mmap of %zu bytes failed\n", bytes);
    std::exit(1);
  }
  auto aligned = (reinterpret_cast<uintptr_t>(raw) + kChunk - 1) & ~(kChunk - 1);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<char*>(aligned);
}
void Unmap(char* p, size_t bytes) { munmap(p, bytes); }  // the aligned part

// One 8-byte store per 48-byte node, as a constructor's first write does.
void WriteNodes(char* p, size_t nodes) {
  for (size_t i = 0; i < nodes; ++i) {
    *reinterpret_cast<volatile int64_t*>(p + i * kNode) = static_cast<int64_t>(i);
  }
}

struct Sizes {
  size_t touch_bytes = size_t{64} << 20;  // first touch, each half
  int64_t loop = 10'000'000;        // clock, rmw, cas iterations
  size_t fresh_nodes = 200'000;     // W7's timed calls
  size_t stream_nodes = 1'000'000;  // W8's burst
  size_t scaling_bytes = 48 << 20;  // per thread
  int64_t compute = 200'000'000;    // per thread
};

// Microseconds per 2 MiB to write one byte per 4 KiB of `bytes` of fresh
// huge-page memory (the page faults alone).
double TouchUsPer2M(size_t bytes) {
  char* p = MapFresh(bytes);
  const int64_t t0 = Now();
  for (size_t off = 0; off < bytes; off += 4096) {
    static_cast<volatile char*>(p)[off] = 1;
  }
  const double us = static_cast<double>(Now() - t0) / 1e3;
  Unmap(p, bytes);
  return us / static_cast<double>(bytes / kChunk);
}

// The first-touch probe: after `idle_s` seconds of sleep, and right after a
// release of twice as much memory.
void FirstTouch(const Sizes& s, double idle_s, double* after_idle,
                double* after_release) {
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  *after_idle = TouchUsPer2M(s.touch_bytes);
  TouchUsPer2M(2 * s.touch_bytes);
  *after_release = TouchUsPer2M(s.touch_bytes);
}

double ClockNs(const Sizes& s) {
  const int64_t t0 = Now();
  int64_t sink = 0;
  for (int64_t i = 0; i < s.loop; ++i) sink += Now();
  const int64_t t1 = Now();
  if (sink == 42) std::puts("");
  return static_cast<double>(t1 - t0) / static_cast<double>(s.loop + 1);
}

double RmwNs(const Sizes& s) {
  std::atomic<int64_t> word{0};
  const int64_t t0 = Now();
  for (int64_t i = 0; i < s.loop; ++i) word.fetch_add(1, std::memory_order_relaxed);
  return static_cast<double>(Now() - t0) / static_cast<double>(s.loop);
}

double CasNs(const Sizes& s) {
  std::atomic<int64_t> word{0};
  const int64_t t0 = Now();
  for (int64_t i = 0; i < s.loop; ++i) {
    int64_t expected = i;
    word.compare_exchange_strong(expected, i + 1, std::memory_order_relaxed);
  }
  return static_cast<double>(Now() - t0) / static_cast<double>(s.loop);
}

// Fresh and warm node writes over the same memory, in ns per node.
void NodeWrites(const Sizes& s, double* fresh, double* warm) {
  const size_t bytes = (s.fresh_nodes * kNode + kChunk - 1) / kChunk * kChunk;
  char* p = MapFresh(bytes);
  int64_t t0 = Now();
  WriteNodes(p, s.fresh_nodes);
  *fresh = static_cast<double>(Now() - t0) / static_cast<double>(s.fresh_nodes);
  t0 = Now();
  WriteNodes(p, s.fresh_nodes);
  *warm = static_cast<double>(Now() - t0) / static_cast<double>(s.fresh_nodes);
  Unmap(p, bytes);
}

// Nodes of fresh memory, written once (faulted in), unmapped on destruction.
class Nodes {
 public:
  explicit Nodes(size_t n)
      : bytes_((n * kNode + kChunk - 1) / kChunk * kChunk), p_(MapFresh(bytes_)) {
    std::memset(p_, 1, bytes_);
  }
  ~Nodes() { Unmap(p_, bytes_); }
  Nodes(const Nodes&) = delete;
  Nodes& operator=(const Nodes&) = delete;
  volatile uint64_t* at(size_t i) const {
    return reinterpret_cast<volatile uint64_t*>(p_ + i * kNode);
  }

 private:
  const size_t bytes_;
  char* const p_;
};

// Sweeps a buffer larger than any last-level cache here.
void EvictCaches() {
  const size_t bytes = size_t{64} << 20;
  char* evict = MapFresh(bytes);
  std::memset(evict, 2, bytes);
  Unmap(evict, bytes);
}

// Read and write every node once, out of cache, in ms.
double StreamMs(const Sizes& s) {
  const Nodes nodes(s.stream_nodes);
  EvictCaches();
  const int64_t t0 = Now();
  uint64_t sum = 0;  // unsigned: the sums wrap, by design
  for (size_t i = 0; i < s.stream_nodes; ++i) {
    volatile uint64_t* node = nodes.at(i);
    sum += node[0];  // the deadline and links
    node[1] = sum;   // the state, the free-list link
  }
  return static_cast<double>(Now() - t0) / 1e6;
}

// Read and write every node once in a random order, prefetching 8 ahead, in
// ms (the shuffle is made before the clock starts).
double RandomMs(const Sizes& s) {
  const Nodes nodes(s.stream_nodes);
  std::vector<uint32_t> order(s.stream_nodes);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  uint64_t x = 88172645463325252ULL;  // xorshift: a fixed, cheap shuffle
  for (size_t i = order.size() - 1; i > 0; --i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::swap(order[i], order[x % (i + 1)]);
  }
  EvictCaches();
  constexpr size_t kAhead = 8;
  const int64_t t0 = Now();
  uint64_t sum = 0;  // unsigned: the sums wrap, by design
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + kAhead < order.size()) {
      __builtin_prefetch(const_cast<const uint64_t*>(nodes.at(order[i + kAhead])), 1);
    }
    volatile uint64_t* node = nodes.at(order[i]);
    sum += node[0];
    node[1] = sum;
  }
  return static_cast<double>(Now() - t0) / 1e6;
}

// Rate of `threads` threads each running `work` once, relative to one.
double Scaling(const std::function<void()>& work) {
  auto wall = [&](int threads) {
    std::vector<std::thread> ts;
    const int64_t t0 = Now();
    for (int i = 0; i < threads; ++i) ts.emplace_back(work);
    for (auto& t : ts) t.join();
    return static_cast<double>(Now() - t0);
  };
  const double one = wall(1);
  const double two = wall(2);
  return 2.0 * one / two;
}

double ComputeScaling(const Sizes& s) {
  return Scaling([n = s.compute] {
    volatile uint64_t x = 1;
    uint64_t v = x;
    for (int64_t i = 0; i < n; ++i) v = v * 6364136223846793005ULL + 1442695040888963407ULL;
    x = v;
  });
}

double FaultScaling(const Sizes& s) {
  return Scaling([bytes = s.scaling_bytes] {
    char* p = MapFresh(bytes);
    WriteNodes(p, bytes / kNode);
    Unmap(p, bytes);
  });
}

struct Row {
  std::string name, unit, what;
  std::vector<double> values;
};

std::string Summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return fmt::format("{:.2f} [{:.2f}-{:.2f}]", v[v.size() / 2], v.front(), v.back());
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  int reps = 5;
  double first_touch_s = 0;  // 0: no first-touch probe
  Sizes s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      s = {size_t{4} << 20, 100'000, 20'000, 20'000, size_t{4} << 20,
           1'000'000};
    } else if (arg.substr(0, 14) == "--first_touch=" &&
               std::atof(argv[i] + 14) > 0) {
      first_touch_s = std::atof(argv[i] + 14);
    } else if (arg.substr(0, 7) == "--reps=" && std::atoi(argv[i] + 7) > 0) {
      reps = std::atoi(argv[i] + 7);
    } else {
      std::fprintf(stderr,
                   "usage: floors [--reps=R] [--first_touch=S] [--quick]\n"
                   "Measures this machine's floors under issue #6's targets; "
                   "see the comment at the top of tools/bench/floors.cc.\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  std::vector<Row> rows = {
      {"clock", "ns", "clock_gettime(CLOCK_MONOTONIC)", {}},
      {"rmw", "ns", "atomic fetch_add, uncontended", {}},
      {"cas", "ns", "atomic compare_exchange, uncontended", {}},
      {"fresh node", "ns/node", "first write of a 48-B node, fresh memory", {}},
      {"warm node", "ns/node", "the same write, memory faulted in", {}},
      {"stream 1M", "ms", "read+write 1M 48-B nodes out of cache", {}},
      {"random 1M", "ms", "the same in random order, prefetched", {}},
      {"scaling, arithmetic", "x", "2 threads / 1 thread", {}},
      {"scaling, fresh memory", "x", "2 threads / 1 thread", {}},
  };
  if (first_touch_s > 0) {
    rows.push_back({"first touch, idle", "us/2MiB",
                    fmt::format("fault-in after {:g} s idle", first_touch_s), {}});
    rows.push_back({"first touch, reused", "us/2MiB",
                    "fault-in right after a release", {}});
  }
  for (int r = 0; r < reps; ++r) {
    rows[0].values.push_back(ClockNs(s));
    rows[1].values.push_back(RmwNs(s));
    rows[2].values.push_back(CasNs(s));
    double fresh = 0, warm = 0;
    NodeWrites(s, &fresh, &warm);
    rows[3].values.push_back(fresh);
    rows[4].values.push_back(warm);
    rows[5].values.push_back(StreamMs(s));
    rows[6].values.push_back(RandomMs(s));
    rows[7].values.push_back(ComputeScaling(s));
    rows[8].values.push_back(FaultScaling(s));
    if (first_touch_s > 0) {
      double idle = 0, reused = 0;
      FirstTouch(s, first_touch_s, &idle, &reused);
      rows[9].values.push_back(idle);
      rows[10].values.push_back(reused);
    }
  }
  fmt::print("Machine floors ({} repetitions, median [min-max]); memory: {}\n",
             reps, tickwheel::bench::MemoryEnvironment());
  for (const Row& row : rows) {
    fmt::print("  {:<22} {:<8} {:<24} {}\n", row.name, row.unit,
               Summary(row.values), row.what);
  }
  const double t1 = Median(rows[0].values) + 2 * Median(rows[1].values) +
                    Median(rows[3].values);
  fmt::print(
      "What the targets stand on:\n"
      "  T1  clock + 2 RMW + fresh node = {:.1f} ns: the parts of a newTimeout() "
      "that grows the pending set, added up before any timer logic "
      "(out-of-order execution overlaps them somewhat; target 40 ns)\n"
      "  T5  {:.1f} ms to read and write 1M nodes: the memory traffic of "
      "expiring the burst, before running any task (target 10 ms)\n"
      "  T6  {:.1f} M/s: 1M nodes in random order per second of memory "
      "traffic alone (target 20 M/s)\n"
      "  T7  {:.2f}x: 2 threads over 1 writing fresh memory, as producers "
      "that grow the pending set do (target 1.5x)\n",
      t1, Median(rows[5].values),
      static_cast<double>(s.stream_nodes) / Median(rows[6].values) / 1e3,
      Median(rows[8].values));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
