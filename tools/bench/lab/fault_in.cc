// tools/bench/lab/fault_in.cc
// -----------------------------------------------------------------------------
// LAB TOOL. What a first touch of memory costs on this machine, the floor
// under a burst of newTimeout() in a fresh process: every pending timeout
// needs its cell on a page that somebody faults in, the worker ahead of the
// producer or the producer itself. Faults in 64 MiB as 2 MiB-aligned chunks,
// one MADV_POPULATE_WRITE each, the way the node pool does (worker/chunk.cc),
// once advised for transparent huge pages and once not, in turns. Before
// each turn it can dirty and free memory and wait: a guest whose free pages
// are reported to the host (virtio free page reporting) hands out pages that
// the host no longer backs once they have sat free for a few seconds, and
// those cost the host's faults on first touch.
//   bazel build -c opt --config=opt //tools/bench/lab:fault_in
//   bazel-bin/tools/bench/lab/fault_in [rounds=3] [dirty_mb=600] [wait_s=3]
// dirty_mb=0: no dirtying and no wait (memory as the process finds it).

#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

namespace {

constexpr size_t kChunk = size_t{2} << 20;
constexpr int kChunks = 32;  // 64 MiB: a million 64-byte cells

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Touches `mb` MiB, gives them back, and waits `wait_s` seconds.
void DirtyAndWait(size_t mb, int wait_s) {
  if (mb == 0) return;
  const size_t bytes = mb << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  for (size_t off = 0; off < bytes; off += 4096) {
    static_cast<volatile char*>(p)[off] = 1;
  }
  munmap(p, bytes);
  std::this_thread::sleep_for(std::chrono::seconds(wait_s));
}

struct Turn {
  double total_ms = 0, worst_ms = 0;
};

// Faults kChunks aligned chunks in, advised for huge pages or not; unmaps
// them afterwards.
Turn FaultIn(bool huge) {
  Turn t;
  char* chunks[kChunks] = {};
  for (char*& base : chunks) {
    void* raw = mmap(nullptr, 2 * kChunk, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) break;
    base = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(raw) + kChunk - 1) & ~(kChunk - 1));
    if (huge) madvise(base, kChunk, MADV_HUGEPAGE);
    const double start = NowMs();
    if (madvise(base, kChunk, MADV_POPULATE_WRITE) != 0) {
      for (size_t off = 0; off < kChunk; off += 4096) {
        static_cast<volatile char*>(static_cast<void*>(base))[off] = 0;
      }
    }
    const double ms = NowMs() - start;
    t.total_ms += ms;
    if (ms > t.worst_ms) t.worst_ms = ms;
  }
  // The whole over-sized mappings: their unaligned ends were never touched.
  for (char* base : chunks) {
    if (base != nullptr) munmap(base - kChunk, 3 * kChunk);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t dirty_mb =
      argc > 2 ? static_cast<size_t>(std::atoll(argv[2])) : 600;
  const int wait_s = argc > 3 ? std::atoi(argv[3]) : 3;
  std::printf(
      "faulting in %d MiB as %d chunks of 2 MiB; before each turn: "
      "%zu MiB dirtied and freed, %d s wait\n",
      kChunks * 2, kChunks, dirty_mb, dirty_mb == 0 ? 0 : wait_s);
  for (int r = 1; r <= rounds; ++r) {
    for (bool huge : {true, false}) {
      DirtyAndWait(dirty_mb, wait_s);
      const Turn t = FaultIn(huge);
      std::printf(
          "round %d, %-15s %7.1f ms in all, %5.2f ms per chunk, "
          "worst %5.2f ms\n",
          r, huge ? "huge pages:" : "4 KiB pages:", t.total_ms,
          t.total_ms / kChunks, t.worst_ms);
    }
  }
  return 0;
}
