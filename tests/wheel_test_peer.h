// tests/wheel_test_peer.h
// -----------------------------------------------------------------------------
// Test-only access to the inside of the hierarchical wheel (worker/wheel.h),
// which declares this class its friend. The worker never needs any of it:
// the level count, the wheel length, a node's remainingRounds, and a check of
// invariants I1 to I3 that walks every bucket and bitmap. Also the nodes a
// wheel test files.

#ifndef TICKWHEEL_TESTS_WHEEL_TEST_PEER_H_
#define TICKWHEEL_TESTS_WHEEL_TEST_PEER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/worker/timeout_node.h"
#include "tickwheel/worker/wheel.h"

namespace tickwheel::internal {

// Nodes for a test's wheel, owned here and freed with it.
struct Nodes {
  std::vector<std::unique_ptr<TimeoutNode>> all;
  TimeoutNode* New() {
    all.push_back(std::make_unique<TimeoutNode>());
    return all.back().get();
  }
};

class WheelTestPeer {
 public:
  // The number of levels: enough to cover every non-negative int64 tick.
  static int Levels(const Wheel& w) { return w.num_levels_; }

  // L, the number of level-0 buckets (one tick each).
  static int TicksPerWheel(const Wheel& w) { return 1 << w.bits0_; }

  // remainingRounds of a linked node, as in Netty (wheel.h, Geometry): full
  // turns of level 0 still to wait, (due - elapsed) >> log2(L); 0 once
  // overdue.
  static int64_t RemainingRounds(const Wheel& w, const TimeoutNode* node) {
    const int64_t ahead = w.DueTickAt(node->deadline.load()) - w.elapsed_;
    return ahead > 0 ? ahead >> w.bits0_ : 0;
  }

  // "" when invariants I1 to I3 of wheel.h hold, else a description of the
  // first violation with the state around it. O(size() + L).
  static std::string CheckInvariants(const Wheel& w) {
    int64_t counted = 0;
    std::string problem;
    for (int level = 0; level < w.num_levels_ && problem.empty(); ++level) {
      const int64_t slots = int64_t{1} << w.levels_[level].bits;
      for (int64_t s = 0; s < slots && problem.empty(); ++s) {
        problem =
            CheckBucket(w, w.levels_[level].buckets[s], level, s, &counted);
      }
    }
    // The bucket being expired, off its slot (wheel.h, "Expiring a
    // bucket"): its nodes count; they are checked once it is back. Its
    // `live` and `begin` lag while the walk's loop runs (ExpireRun()
    // settles them when it ends), so its nodes are counted one by one.
    if (w.run_ != nullptr) {
      for (uint32_t i = 0; i < w.run_->size; ++i) {
        counted += w.run_->slots[i] != nullptr;
      }
    }
    if (problem.empty() && counted != w.size_) {
      problem = fmt::format("size()={} but {} nodes are linked (L={})", w.size_,
                            counted, TicksPerWheel(w));
    }
    return problem;
  }

 private:
  // I1 and I3 for each node of bucket `slot` of `level`, I2 for the bucket;
  // adds its live nodes to *counted.
  static std::string CheckBucket(const Wheel& w, const Wheel::Bucket& b,
                                 int level, int64_t slot, int64_t* counted) {
    uint32_t live = 0;
    for (uint32_t i = 0; i < b.size; ++i) {
      const TimeoutNode* n = b.slots[i];
      if (n == nullptr) continue;
      if (i < b.begin) {
        return fmt::format("level {} bucket {}: node {} at {} before begin {}",
                           level, slot, fmt::ptr(n), i, b.begin);
      }
      ++live;
      const int64_t due = w.DueTickAt(n->deadline.load());
      const bool overdue = Wheel::LevelOf(n) == Wheel::kOverdueLevel;
      const bool placed = overdue ? level == 0 && due < w.elapsed_ &&
                                        slot == w.SlotOf(0, w.elapsed_)
                                  : Wheel::LevelOf(n) == level &&
                                        w.SlotOf(level, due) == slot &&
                                        due >= w.elapsed_ &&
                                        w.LevelFor(due) <= level;
      if ((n->where & Wheel::kIndexMask) != i || !placed) {
        return fmt::format(
            "level {} bucket {}: node {} deadline={} due_tick={} where={}:{} "
            "misplaced at index {}, elapsed={} (L={})",
            level, slot, fmt::ptr(n), n->deadline.load(), due,
            Wheel::LevelOf(n), n->where & Wheel::kIndexMask, i, w.elapsed_,
            TicksPerWheel(w));
      }
    }
    if (live != b.live || b.size > b.capacity || b.begin > b.size) {
      return fmt::format(
          "level {} bucket {}: live={} but {} nodes; size={} capacity={} "
          "begin={}",
          level, slot, b.live, live, b.size, b.capacity, b.begin);
    }
    const bool bit = (w.levels_[level].occupied[slot >> 6] >> (slot & 63)) & 1;
    if (bit != (live > 0)) {
      return fmt::format("level {} bucket {}: occupancy bit {} with {} nodes",
                         level, slot, bit, live);
    }
    *counted += live;
    return "";
  }
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TESTS_WHEEL_TEST_PEER_H_
