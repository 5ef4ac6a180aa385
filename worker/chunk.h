// worker/chunk.h
// -----------------------------------------------------------------------------
// Internal. A chunk: the unit in which a cell depot (worker/cell_depot.h) gets
// memory from the kernel and gives it back. Its layout (a header, a bitmap of
// its free cells, the cells), the bitmap's operations, and the kernel calls
// that map a chunk, fault its pages in and give them back.
//
// A chunk is kChunkBytes long and kChunkBytes-aligned, so that a cell's chunk
// is its address rounded down (ChunkHeader::Of()). It is mapped on small
// pages (see MapFaultedChunk()):
//
//   | ChunkHeader | bitmap, 1 = free | pad | cell 0 | cell 1 | ... | tail |
//   ^ kChunkBytes-aligned                  ^ ChunkLayout::first_cell_offset
//
// A free cell holds nothing the chunk needs: in the bitmap it is a set bit,
// and in a list (a thread's cache, a batch on its way) its first word is the
// link (FreeCell). So a chunk whose cells are all free can give its pages
// back (ReleasePages()); it is formatted again (Format()) when it next goes
// into use.
//
// Thread-compatible: the depot's mutex guards the header and bitmap of every
// chunk in its tables. The kernel calls are slow (an mmap, a fault of every
// page, an madvise): the depot makes them outside its mutex, on chunks no
// other thread can reach.

#ifndef TICKWHEEL_WORKER_CHUNK_H_
#define TICKWHEEL_WORKER_CHUNK_H_

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tickwheel::internal {

inline constexpr size_t kChunkBytes = size_t{2} << 20;

// A free cell in a list: its first word links it to the next.
struct FreeCell {
  FreeCell* next;
};

// Divides an offset inside a chunk (below 2^21) by a fixed cell size with a
// multiply and a shift instead of a division: a cell's index, once per freed
// cell (ChunkHeader::MarkFree()). With shift = 21 + ceil(log2 d) and
// magic = ceil(2^shift / d), magic * d - 2^shift is below
// d <= 2^(shift - 21), so n * magic / 2^shift exceeds n / d by less than 1/d
// for n < 2^21; n / d is q + r/d with r <= d - 1, so the floor is still q
// (the round-up method of Granlund & Montgomery, 1994). magic is below 2^22,
// so the product stays below 2^43.
struct CellDivider {
  uint64_t magic;
  int shift;
  static constexpr CellDivider For(uint64_t d) {
    int log2_up = 0;
    while ((uint64_t{1} << log2_up) < d) ++log2_up;
    const int shift = 21 + log2_up;
    return {((uint64_t{1} << shift) + d - 1) / d, shift};
  }
  constexpr uint64_t operator()(uint64_t n) const { return n * magic >> shift; }
};
static_assert(kChunkBytes == size_t{1} << 21,
              "CellDivider is exact for offsets below 2^21");

// The geometry of the chunks of cells of one size.
struct ChunkLayout {
  explicit ChunkLayout(size_t cell_size);

  size_t cell_size;
  CellDivider divide;        // by cell_size
  size_t first_cell_offset;  // header and bitmap, rounded up to a cell
  size_t cells_per_chunk;
  uint32_t words;  // bitmap words in use: one bit per cell
};

// At the front of every chunk; the bitmap follows it, then the cells.
struct ChunkHeader {
  uint32_t index;   // in the depot's table of chunks in use
  uint32_t free;    // cells whose bit is set
  uint32_t cursor;  // no free bit in any word before this one
  uint32_t words;   // bitmap words
  // When it last became spare (wholly free in use, or faulted into the
  // reserve): a MonotonicNanos() reading, for the decay.
  int64_t spare_since;

  static ChunkHeader* Of(const void* cell) {
    return reinterpret_cast<ChunkHeader*>(reinterpret_cast<uintptr_t>(cell) &
                                          ~uintptr_t{kChunkBytes - 1});
  }
  char* base() { return reinterpret_cast<char*>(this); }
  uint64_t* bits() { return reinterpret_cast<uint64_t*>(this + 1); }

  // Every cell free, the cursor at the start; `index` in the depot's table.
  void Format(const ChunkLayout& layout, uint32_t index);

  // Links up to `max` free cells at *tail, lowest address first, and
  // advances `tail` past them; clears their bits and moves the cursor.
  // Returns how many (fewer than `max` only when the chunk ran out).
  uint32_t TakeCells(const ChunkLayout& layout, uint32_t max,
                     FreeCell**& tail) {
    uint64_t* bits = this->bits();
    char* cells = base() + layout.first_cell_offset;
    uint32_t n = 0;
    uint32_t w = cursor;
    for (; w < words && n < max; ++w) {
      uint64_t word = bits[w];
      while (word != 0 && n < max) {
        const size_t i =
            size_t{w} * 64 + static_cast<size_t>(std::countr_zero(word));
        word &= word - 1;
        auto* cell = reinterpret_cast<FreeCell*>(cells + i * layout.cell_size);
        *tail = cell;
        tail = &cell->next;
        ++n;
      }
      bits[w] = word;
      if (word != 0) break;  // max reached inside this word
    }
    cursor = w;
    free -= n;
    return n;
  }

  // Sets the bit of `cell`, one of this chunk's, and returns its bitmap
  // word; `free` and `cursor` are the caller's to settle (once per run of
  // cells). Aborts if the bit was set already: the cell was freed twice.
  // `divide` and `first_cell` are the layout's, passed by value so that the
  // caller's loop keeps them in registers across the bitmap's stores.
  uint32_t MarkFree(const FreeCell* cell, CellDivider divide,
                    size_t first_cell) {
    const auto offset = static_cast<size_t>(
        reinterpret_cast<const char*>(cell) - base() - first_cell);
    const size_t i = divide(offset);
    const auto w = static_cast<uint32_t>(i / 64);
    const uint64_t bit = uint64_t{1} << (i % 64);
    uint64_t& word = bits()[w];
    if (word & bit) DoubleFree(cell);
    word |= bit;
    return w;
  }

  [[noreturn]] static void DoubleFree(const void* cell);
};
static_assert(sizeof(ChunkHeader) % alignof(uint64_t) == 0,
              "the bitmap follows the header");

// The kernel calls. Each is slow (a system call, and page faults for the
// first two): never made with a depot's mutex held.

// A fresh kChunkBytes-aligned mapping of kChunkBytes, advised against huge
// pages (their first touch is the slow one on a VM whose host takes free
// memory back), with every page faulted in; nullptr when out of memory.
char* MapFaultedChunk();
// Faults every page of the chunk at `base` in, writable, so that later
// writes take no fault. False when out of memory.
bool FaultIn(char* base);
// Gives the pages of the chunk at `base` back to the kernel; the address
// range stays mapped and reads as zeros until FaultIn(). False if the kernel
// refused, and the pages stay resident.
bool ReleasePages(char* base);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_CHUNK_H_
