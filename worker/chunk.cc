// worker/chunk.cc

#include "tickwheel/worker/chunk.h"

#include <errno.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tickwheel::internal {
namespace {

constexpr size_t kPage = 4096;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

// A kChunkBytes-aligned, zeroed region of kChunkBytes, or nullptr: twice the
// size is mapped and the ends beyond the aligned chunk unmapped.
char* MapAligned() {
  void* raw = mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned =
      (start + kChunkBytes - 1) & ~uintptr_t{kChunkBytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + 2 * kChunkBytes;
  if (end > aligned + kChunkBytes) {
    munmap(reinterpret_cast<void*>(aligned + kChunkBytes),
           end - aligned - kChunkBytes);
  }
  // Small pages, even where THP is "always": on a VM that reports free
  // memory to its host, a huge page is a free 2 MiB block the host has most
  // likely taken back, and faulting it in waits for the host; small pages
  // come first from smaller free pieces the host still backs. Why, and what
  // the walk gives up: docs/DESIGN.md, "Which pages".
  madvise(reinterpret_cast<void*>(aligned), kChunkBytes, MADV_NOHUGEPAGE);
  return reinterpret_cast<char*>(aligned);
}

}  // namespace

ChunkLayout::ChunkLayout(size_t size)
    : cell_size(size), divide(CellDivider::For(size)) {
  // Room for a bit per cell as if the cells began at the chunk's start; the
  // cells after the header are fewer, so the bitmap in use is shorter.
  const size_t max_cells = kChunkBytes / size;
  const size_t header =
      sizeof(ChunkHeader) + (max_cells + 63) / 64 * sizeof(uint64_t);
  first_cell_offset = (header + size - 1) / size * size;
  cells_per_chunk = (kChunkBytes - first_cell_offset) / size;
  words = static_cast<uint32_t>((cells_per_chunk + 63) / 64);
}

void ChunkHeader::Format(const ChunkLayout& layout, uint32_t chunk_index) {
  index = chunk_index;
  free = static_cast<uint32_t>(layout.cells_per_chunk);
  cursor = 0;
  words = layout.words;
  uint64_t* bits = this->bits();
  for (uint32_t w = 0; w < words; ++w) bits[w] = ~uint64_t{0};
  if (const size_t tail = layout.cells_per_chunk % 64; tail != 0) {
    bits[words - 1] = (uint64_t{1} << tail) - 1;
  }
}

void ChunkHeader::DoubleFree(const void* cell) {
  std::fprintf(stderr,
               "tickwheel: pool cell %p freed twice (a TimeoutNode reference "
               "count went wrong)\n",
               cell);
  std::abort();
}

bool FaultIn(char* base) {
  // One call for the whole chunk. A kernel without MADV_POPULATE_WRITE
  // rejects it with EINVAL: then one write per page, volatile so that it is
  // not optimised away.
  if (madvise(base, kChunkBytes, MADV_POPULATE_WRITE) == 0) return true;
  if (errno != EINVAL) return false;  // ENOMEM, or the mapping is gone
  for (size_t off = 0; off < kChunkBytes; off += kPage) {
    static_cast<volatile char*>(static_cast<void*>(base))[off] = 0;
  }
  return true;
}

char* MapFaultedChunk() {
  char* base = MapAligned();
  if (base == nullptr) return nullptr;
  if (!FaultIn(base)) {
    munmap(base, kChunkBytes);
    return nullptr;
  }
  return base;
}

bool ReleasePages(char* base) {
  return madvise(base, kChunkBytes, MADV_DONTNEED) == 0;
}

}  // namespace tickwheel::internal
