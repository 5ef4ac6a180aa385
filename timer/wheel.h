// timer/wheel.h
// -----------------------------------------------------------------------------
// Internal. The timing wheel behind tickwheel::Timer: Netty's hashed wheel of
// `ticks_per_wheel` buckets as the lowest level of a hierarchy, in the manner
// of Varghese & Lauck's scheme 7 (hierarchical wheels, as in Kafka and tokio).
//
// The wheel is a plain single-threaded data structure that is told the time in
// ticks; it reads no clock, starts no thread and never sleeps, so the same
// calls always give the same result. The worker (worker/worker.h) owns it and
// is the only thread that touches it.
//
// Why a hierarchy
//   Netty keeps every timeout in one ring and walks the whole bucket at every
//   visit, decrementing remainingRounds of entries that are not due: with a
//   million timeouts 10-60 s away and a 1 ms tick, that walk costs about a
//   third of a core, and the worker must wake every tick because it cannot
//   know when the next entry is due. Here only entries due within the current
//   turn of level 0 sit in level 0; later ones sit in coarser levels and move
//   down ("cascade") when their time approaches. Every entry of a level-0
//   bucket is due when the bucket comes up, so no entry is ever looked at
//   before it is due except to move it down, at most once per level. An
//   occupancy bitmap per level finds the next bucket with work without
//   scanning empty ones, so the worker can sleep until exactly then.
//
// Geometry
//   Level 0: L = ticks_per_wheel = 2^b buckets of one tick each: the hashed
//   wheel users configure, one turn = tick_duration * L. Level j >= 1: 64
//   buckets of L * 64^(j-1) ticks each. Enough levels to cover every int64
//   tick (10 levels for L = 512).
//   `elapsed` is the first tick not yet processed. Write a tick in mixed radix
//   (the low b bits are the level-0 digit, then 6 bits per upper level). A
//   node due at tick d goes to the level of the highest digit in which d and
//   elapsed differ (level 0 when they differ only in the level-0 digit or not
//   at all), into the bucket named by d's digit at that level. While the wheel is at
//   `elapsed`,
//       remainingRounds = (d - elapsed) >> b
//   is the number of full turns of the level-0 wheel still to wait, as in
//   Netty (it is derived, never stored).
//
// Invariants (CheckInvariants() verifies them)
//   I1  A node is linked in exactly one bucket iff `in_bucket` is set; its
//       bucket is (level, digit of due_tick at that level).
//   I2  Bucket lists are well formed (prev/next agree, head and tail right),
//       a bucket's occupancy bit is set iff it is non-empty, and size() equals
//       the number of linked nodes.
//   I3  Every node has due_tick >= elapsed, and shares with elapsed every digit
//       above its level: a level's occupied buckets all lie at or after
//       elapsed's own digit at that level.
//   I4  Between calls of Advance(), every occupied upper bucket starts after
//       elapsed: nodes due soon have already moved down, so new nodes due in
//       the same tick queue behind them and a tick's nodes run in insertion
//       order.
//
// Cost (n = size())
//   Insert, Remove: O(1). NextWorkTick: O(levels + L/64) bit scans in the
//   worst case, O(levels) when level 0 has work near elapsed. Advance: O(1)
//   per expired node plus O(1) per cascaded node; each node cascades at most
//   once per level it passes through. Memory: 16 bytes per level-0 bucket plus
//   L/8 bytes of bitmap, allocated lazily by the OS (calloc).
//
// This class is thread-compatible (one thread at a time).

#ifndef TICKWHEEL_TIMER_WHEEL_H_
#define TICKWHEEL_TIMER_WHEEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "timer/timeout_node.h"

namespace tickwheel::internal {

class Wheel {
 public:
  static constexpr int kMaxTicksPerWheel = 1 << 30;
  static constexpr int kUpperLevelBits = 6;  // 64 buckets per upper level
  static constexpr int kMaxLevels = 2 + (62 - 0) / kUpperLevelBits;
  // NextWorkTick() when the wheel is empty.
  static constexpr int64_t kNever = INT64_MAX;

  // The number of buckets a wheel gets for a requested `ticks_per_wheel`:
  // rounded up to a power of two. Requires 1 <= ticks_per_wheel <= 2^30.
  static int NormalizeTicksPerWheel(int ticks_per_wheel);

  // The tick at which a node with `deadline` (nanoseconds after start) is due,
  // for a tick of `tick_nanos`: the first tick whose end is at or after the
  // deadline. Tick k ends at (k + 1) * tick_nanos, so this never runs a task
  // early. Never overflows.
  static int64_t DueTick(int64_t deadline, int64_t tick_nanos);

  // `ticks_per_wheel` must already be normalized. Throws std::bad_alloc when
  // the level-0 arrays cannot be allocated.
  explicit Wheel(int ticks_per_wheel);
  ~Wheel();
  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  int ticks_per_wheel() const { return 1 << bits0_; }
  int levels() const { return num_levels_; }
  int64_t size() const { return size_; }
  // The first tick not yet processed.
  int64_t elapsed() const { return elapsed_; }

  // Links `node` to be handed out when the wheel processes `due_tick`; a due
  // tick before elapsed() counts as elapsed(): nothing is scheduled into a
  // tick already processed. Sets node->due_tick and node->level.
  void Insert(TimeoutNode* node, int64_t due_tick);

  // Unlinks `node`, which must be linked.
  void Remove(TimeoutNode* node);

  // remainingRounds of a linked node (see Geometry).
  int64_t RemainingRounds(const TimeoutNode* node) const {
    return (node->due_tick - elapsed_) >> bits0_;
  }

  // The earliest tick at which Advance() has work: a level-0 bucket to expire
  // or an upper bucket to cascade. kNever when the wheel is empty.
  int64_t NextWorkTick() const;

  // Processes the ticks from elapsed() up to and including `last_tick`:
  // cascades upper buckets as their time comes and hands every node due at or
  // before `last_tick` to `expire(node)`, earliest tick first and in insertion
  // order within a tick, after unlinking it. Stops once `budget` nodes have
  // been expired or cascaded, or when `expire` returns false, and then returns
  // false: call again to go on. Returns true when everything up to
  // `last_tick` is done; elapsed() is then max(elapsed(), last_tick + 1).
  // `expire` must not call Insert or Remove.
  template <typename F>
  bool Advance(int64_t last_tick, int64_t budget, F&& expire);

  // Unlinks every node, calling `f(node)` for each.
  template <typename F>
  void DrainAll(F&& f);

  // "" when invariants I1 to I3 hold, else a description of the first
  // violation with the state around it. O(size() + L).
  std::string CheckInvariants() const;

 private:
  struct Bucket {
    TimeoutNode* head = nullptr;
    TimeoutNode* tail = nullptr;
  };
  struct Level {
    int shift = 0;  // log2 of a bucket's width in ticks
    int bits = 0;   // log2 of the number of buckets
    Bucket* buckets = nullptr;
    uint64_t* occupied = nullptr;  // one bit per bucket
  };

  static TimeoutNode* Next(const TimeoutNode* n) {
    return n->next.load(std::memory_order_relaxed);
  }
  int LevelFor(int64_t due_tick) const;
  int64_t SlotOf(int level, int64_t tick) const {
    const Level& l = levels_[level];
    return (tick >> l.shift) & ((int64_t{1} << l.bits) - 1);
  }
  Bucket& BucketOf(const TimeoutNode* n) {
    return levels_[n->level].buckets[SlotOf(n->level, n->due_tick)];
  }
  // The first occupied bucket of `level` at or after elapsed's digit there,
  // or -1.
  int64_t NextOccupied(int level) const;
  // The first tick of bucket `slot` of `level`, in elapsed's current turn.
  int64_t SlotStart(int level, int64_t slot) const;
  // Finds the bucket Advance() must handle next, the one with the earliest
  // start, an upper one on a tie (cascade before expiring); false when none.
  bool NextWork(int* level, int64_t* slot, int64_t* tick) const;

  int bits0_;
  int num_levels_;
  Level levels_[kMaxLevels];
  int64_t elapsed_ = 0;
  int64_t size_ = 0;
};

template <typename F>
bool Wheel::Advance(int64_t last_tick, int64_t budget, F&& expire) {
  int64_t ops = 0;
  int level;
  int64_t slot, tick;
  // Expire level-0 buckets up to last_tick, and cascade upper buckets that
  // start at or before last_tick + 1: once elapsed() moves to last_tick + 1,
  // no upper bucket may start at or before it (I4).
  while (NextWork(&level, &slot, &tick) &&
         tick <= (level == 0 ? last_tick : last_tick + 1)) {
    if (tick > elapsed_) elapsed_ = tick;  // nothing to do in between
    Bucket& bucket = levels_[level].buckets[slot];
    while (bucket.head != nullptr) {
      if (ops == budget) return false;
      ++ops;
      TimeoutNode* n = bucket.head;
      Remove(n);
      if (level == 0) {
        if (!expire(n)) return false;
      } else {
        Insert(n, n->due_tick);  // cascade: lands at a lower level
      }
    }
  }
  if (last_tick >= elapsed_) elapsed_ = last_tick + 1;
  return true;
}

template <typename F>
void Wheel::DrainAll(F&& f) {
  for (int level = 0; level < num_levels_; ++level) {
    const Level& l = levels_[level];
    const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
    for (int64_t w = 0; w < words; ++w) {
      while (l.occupied[w] != 0) {
        const int64_t slot = w * 64 + __builtin_ctzll(l.occupied[w]);
        Bucket& bucket = l.buckets[slot];
        while (bucket.head != nullptr) {
          TimeoutNode* node = bucket.head;
          Remove(node);  // clears the bit with the last node
          f(node);
        }
      }
    }
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_WHEEL_H_
