// tests/chunk_test.cc
// -----------------------------------------------------------------------------
// A chunk's layout and bitmap (worker/chunk.h): a cell's index comes out of
// the divider exactly; the cells follow the header and bitmap and fill the
// chunk; a cell's chunk is its address rounded down; cells are taken lowest
// address first, and a cell given back is taken again before higher ones; a
// cell freed twice stops the process. On a chunk from the heap: the kernel
// calls are the pool tests' (cell_pool_test, pool_prefault_test,
// pool_decay_test).

#include "tickwheel/worker/chunk.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gtest/gtest.h"

namespace tickwheel::internal {
namespace {

TEST(CellDividerTest, MatchesDivisionForEveryOffsetInAChunk) {
  // Exhaustively for the node's cell size and a power of two; every cell
  // boundary for the other sizes a pool may use.
  for (uint64_t d : {48, 64}) {
    const CellDivider div = CellDivider::For(d);
    for (uint64_t n = 0; n < kChunkBytes; ++n) {
      ASSERT_EQ(div(n), n / d) << n << " / " << d;
    }
  }
  for (uint64_t d = 16; d <= 1024; d += 16) {
    const CellDivider div = CellDivider::For(d);
    for (uint64_t n = 0; n < kChunkBytes; n += d) {
      ASSERT_EQ(div(n), n / d) << n << " / " << d;
      ASSERT_EQ(div(n + d - 1), n / d) << n + d - 1 << " / " << d;
    }
  }
}

TEST(ChunkLayoutTest, CellsFollowTheBitmapAndFillTheChunk) {
  for (size_t size = 16; size <= 1024; size += 16) {
    const ChunkLayout layout(size);
    EXPECT_EQ(layout.first_cell_offset % size, 0u) << size;
    EXPECT_GE(layout.first_cell_offset,
              sizeof(ChunkHeader) + layout.words * sizeof(uint64_t))
        << size;
    EXPECT_GE(uint64_t{layout.words} * 64, layout.cells_per_chunk) << size;
    EXPECT_LT((uint64_t{layout.words} - 1) * 64, layout.cells_per_chunk)
        << size;
    // As many cells as fit after the header, and no more.
    EXPECT_LE(layout.first_cell_offset + layout.cells_per_chunk * size,
              kChunkBytes)
        << size;
    EXPECT_GT(layout.first_cell_offset + (layout.cells_per_chunk + 1) * size,
              kChunkBytes)
        << size;
  }
}

// A kChunkBytes-aligned chunk from the heap, formatted for `cell_size`.
class ChunkHeaderTest : public ::testing::Test {
 protected:
  static constexpr size_t kCellSize = 64;
  ChunkHeaderTest()
      : memory_(
            static_cast<char*>(std::aligned_alloc(kChunkBytes, kChunkBytes))),
        layout_(kCellSize) {
    chunk()->Format(layout_, 0);
  }
  ~ChunkHeaderTest() override { std::free(memory_); }

  ChunkHeader* chunk() { return reinterpret_cast<ChunkHeader*>(memory_); }
  char* cell(size_t i) {
    return memory_ + layout_.first_cell_offset + i * kCellSize;
  }
  // Up to `max` cells, as the depot takes them.
  std::vector<char*> Take(uint32_t max) {
    FreeCell* head = nullptr;
    FreeCell** tail = &head;
    const uint32_t n = chunk()->TakeCells(layout_, max, tail);
    *tail = nullptr;
    std::vector<char*> cells;
    for (FreeCell* c = head; c != nullptr; c = c->next) {
      cells.push_back(reinterpret_cast<char*>(c));
    }
    EXPECT_EQ(cells.size(), n);
    return cells;
  }
  // Gives `c` back and settles the chunk's counters, as the depot does.
  void Give(char* c) {
    const uint32_t w =
        chunk()->MarkFree(reinterpret_cast<FreeCell*>(c), layout_.divide,
                          layout_.first_cell_offset);
    ++chunk()->free;
    if (w < chunk()->cursor) chunk()->cursor = w;
  }

  char* memory_;
  const ChunkLayout layout_;
};

TEST_F(ChunkHeaderTest, EveryCellIsFreeAfterFormat) {
  EXPECT_EQ(chunk()->free, layout_.cells_per_chunk);
  EXPECT_EQ(Take(UINT32_MAX).size(), layout_.cells_per_chunk);
  EXPECT_EQ(chunk()->free, 0u);
  EXPECT_TRUE(Take(1).empty());
}

TEST_F(ChunkHeaderTest, OfFindsTheChunkOfEveryCell) {
  for (size_t i = 0; i < layout_.cells_per_chunk; i += 97) {
    EXPECT_EQ(ChunkHeader::Of(cell(i)), chunk()) << i;
    EXPECT_EQ(ChunkHeader::Of(cell(i) + kCellSize - 1), chunk()) << i;
  }
}

TEST_F(ChunkHeaderTest, CellsAreTakenLowestAddressFirst) {
  const std::vector<char*> first = Take(100);
  const std::vector<char*> second = Take(100);
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(first[i], cell(i));
    EXPECT_EQ(second[i], cell(100 + i));
  }
  EXPECT_EQ(chunk()->free, layout_.cells_per_chunk - 200);
}

TEST_F(ChunkHeaderTest, CellsGivenBackAreTakenAgainBeforeHigherOnes) {
  Take(1000);
  // Given back in a scrambled order, taken again in address order, then the
  // cells never taken.
  for (size_t i : {700, 3, 129, 64, 999}) Give(cell(i));
  const std::vector<char*> again = Take(7);
  const std::vector<char*> expected = {cell(3),   cell(64),  cell(129),
                                       cell(700), cell(999), cell(1000),
                                       cell(1001)};
  EXPECT_EQ(again, expected);
}

TEST_F(ChunkHeaderTest, FreeingACellTwiceStopsTheProcess) {
  Take(10);
  Give(cell(5));
  EXPECT_DEATH(Give(cell(5)), "freed twice");
}

}  // namespace
}  // namespace tickwheel::internal
