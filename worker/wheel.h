// worker/wheel.h
// -----------------------------------------------------------------------------
// Internal. The timing wheel behind tickwheel::Timer: Netty's hashed wheel of
// `ticks_per_wheel` buckets as the lowest level of a hierarchy, in the manner
// of Varghese & Lauck's scheme 7 (hierarchical wheels, as in Kafka and tokio).
//
// The wheel is a plain single-threaded data structure that is told the time in
// ticks (it converts a node's deadline to its due tick itself); it reads no
// clock, starts no thread and never sleeps, so the same calls always give the
// same result. A wheel driver (worker/wheel_driver.h) owns it and is the only
// thread that touches it.
//
// Why a hierarchy
//   Netty keeps every timeout in one ring and walks the whole bucket at every
//   visit, decrementing remainingRounds of entries that are not due, so far
//   entries are walked again and again, and the worker must wake every tick
//   because it cannot know when the next entry is due. Here only entries due
//   within the current turn of level 0 sit in level 0; later ones sit in
//   coarser levels and move down ("cascade") when their time approaches.
//   Every entry of a level-0 bucket is due when the bucket comes up, so no
//   entry is looked at before it is due except to move it down, at most once
//   per level. An occupancy bitmap per level finds the next bucket with work
//   without scanning empty ones, so the worker can sleep until exactly then.
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
//   at all), into the bucket named by d's digit at that level. While the wheel
//   is at `elapsed`,
//       remainingRounds = (d - elapsed) >> b
//   is the number of full turns of the level-0 wheel still to wait, as in
//   Netty (it is derived, never stored).
//
// Buckets are arrays, not lists
//   A bucket is a growable array of node pointers. Expiring or cascading a
//   bucket walks the array and prefetches the nodes a few slots ahead, so a
//   bucket whose nodes lie scattered over the heap (random delays) costs
//   memory bandwidth, not one cache miss after another as a linked list
//   would, where each node's address is known only once the previous node
//   has arrived. A node records its level and its index in the array
//   (`where`), and its deadline names the bucket, so Remove() is O(1): it
//   clears the slot, leaving a tombstone; a bucket with more tombstones than
//   live nodes is compacted, which moves each live node once per compaction.
//   The node keeps no copy of the deadline it was filed by (8 bytes a
//   timeout): after a reset() from another thread moved it, Remove() checks
//   the level's occupied buckets at the node's index (FindSlot()). An
//   overdue node (one that reaches the worker after its due tick was
//   processed) is due at elapsed instead, as in Netty: it joins the level-0
//   bucket of elapsed, marked kOverdueLevel.
//   (A driver expires at once, instead, a node that was due already when it
//   last read the clock: WheelDriver::File().)
//
// Expiring a bucket
//   A level-0 bucket is taken off its slot whole before its nodes are handed
//   out (ExpireRun()), as tokio's wheel takes a slot's entries before it
//   fires them: the slot holds an empty bucket meanwhile, so the callback
//   may Insert anywhere, that tick included, and the walk never reads an
//   array that an Insert grows or compacts. The bucket being expired, `run_`,
//   is still part of the wheel: size() counts its nodes, Remove() finds them
//   (the run's array at a node's index), ForEach() and DrainAll() visit
//   them. When the walk ends (the bucket done, the budget spent, or the
//   callback asking to stop) what is left goes back to its slot, in front of
//   what was filed there meanwhile (Reattach()).
//
// Invariants (tests/wheel_test_peer.h checks I1 to I3)
//   I1  A node is linked iff `where` names a level and an index, and that
//       slot holds the node; its bucket is (level, digit at that level of
//       the due tick it was filed by: its deadline's unless a reset() moved
//       it since), or for kOverdueLevel the level-0 bucket of elapsed.
//   I2  A bucket's slots before `begin` are empty, `live` counts the non-empty
//       slots, its occupancy bit is set iff live > 0, and size() is the sum of
//       `live` over all buckets.
//   I3  Every node not marked overdue has due tick >= elapsed, and shares
//       with elapsed every digit above its level: a level's occupied buckets
//       all lie at or after elapsed's own digit at that level. Every overdue
//       node has due tick < elapsed. (elapsed does not move past a tick
//       before its bucket is empty, so an overdue node stays where I1 says.)
//   I4  Between calls of Advance(), every occupied upper bucket starts after
//       elapsed: nodes due soon have already moved down, so new nodes due in
//       the same tick queue behind them and a tick's nodes run in insertion
//       order.
//
// Cost (n = size())
//   Insert, Remove: O(1) amortized (a bucket array may grow, or be
//   compacted; Remove() of a node moved since it was filed: O(occupied
//   buckets of its level + L/64)); DueTickAt is a multiply. NextWorkTick:
//   O(levels + L/64) bit scans in the worst case, O(levels) when level 0 has
//   work near elapsed. Advance: O(1) per expired or cascaded node; each node
//   cascades at most once per level it passes through. Memory: 8 bytes per
//   linked node in its bucket's array (arrays of a page and more are mapped
//   pages, grown in place, so their unused room costs address space, not
//   memory; smaller ones can be up to half empty), 24 bytes per bucket plus
//   L/4 bytes of bitmaps; level 0 is allocated lazily by the OS (calloc),
//   and an emptied array larger than kKeptSlots is freed.
//   Out of memory while growing an array, the process aborts with a message,
//   as operator new would: the worker cannot refuse a node it has accepted.
//
// This class is thread-compatible (one thread at a time).

#ifndef TICKWHEEL_WORKER_WHEEL_H_
#define TICKWHEEL_WORKER_WHEEL_H_

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "tickwheel/base/nanos.h"
#include "tickwheel/worker/tick_divider.h"
#include "tickwheel/worker/timeout_node.h"

namespace tickwheel::internal {

class Wheel {
 public:
  static constexpr int kMaxTicksPerWheel = 1 << 30;
  static constexpr int kUpperLevelBits = 6;  // 64 buckets per upper level
  static constexpr int kMaxLevels = 2 + (62 - 0) / kUpperLevelBits;
  // NextWorkTick() when the wheel is empty.
  static constexpr int64_t kNever = INT64_MAX;
  // LevelOf() for an overdue node (see Buckets), and for an unlinked node.
  static constexpr int kOverdueLevel = 14;
  static constexpr int kUnlinkedLevel = 15;
  // An emptied bucket keeps an array of up to this many slots for reuse.
  static constexpr uint32_t kKeptSlots = 64;

  // The number of buckets a wheel gets for a requested `ticks_per_wheel`:
  // rounded up to a power of two. Requires 1 <= ticks_per_wheel <= 2^30.
  static int NormalizeTicksPerWheel(int ticks_per_wheel);

  // `ticks_per_wheel` must already be normalized; `tick_nanos` > 0 converts
  // node deadlines to ticks (1 makes a deadline d due at tick d - 1). Throws
  // std::bad_alloc when the level-0 arrays cannot be allocated.
  explicit Wheel(int ticks_per_wheel, int64_t tick_nanos = 1);
  ~Wheel();
  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  int64_t size() const { return size_; }
  // The first tick not yet processed.
  int64_t elapsed() const { return elapsed_; }

  // Node deadlines are clock readings; tick k of the wheel ends at origin +
  // (k + 1) * tick_nanos. The worker sets the origin to its startTime
  // before it files a node; it is 0 until then.
  void SetOrigin(int64_t origin) { origin_ = origin; }
  // The tick a node filed by `deadline` (a clock reading) is due at:
  // DueTick(deadline - origin, tick_nanos), by multiplication. A deadline of
  // INT64_MAX (a delay that saturated) is never due: it counts as INT64_MAX
  // after the origin, past any tick the clock can reach.
  int64_t DueTickAt(int64_t deadline) const {
    const int64_t d =
        deadline == INT64_MAX ? INT64_MAX : SaturatingSub(deadline, origin_);
    if (d <= 0) return 0;
    int64_t remainder;
    const int64_t q = divider_.Divide(d, &remainder);
    return q + (remainder != 0 ? 1 : 0) - 1;
  }
  static int LevelOf(const TimeoutNode* node) {
    return static_cast<int>(node->where >> kIndexBits);
  }
  static bool Linked(const TimeoutNode* node) {
    return LevelOf(node) != kUnlinkedLevel;
  }
  // Links `node` (unlinked) to be handed out when the wheel processes the
  // due tick of `filed_by`, or elapsed() if that tick is processed already.
  // `filed_by`: the node's deadline as the caller read it, or the end of the
  // tick in progress for a periodic run that waits for the executor
  // (WheelDriver::Refile()). Inline: the worker's transfer loop and cascades
  // call it once per node, and the work is a few stores.
  void Insert(TimeoutNode* node, int64_t filed_by);

  // Unlinks `node`, which must be linked.
  void Remove(TimeoutNode* node);

  // The earliest tick at which Advance() has work: a level-0 bucket to expire
  // or an upper bucket to cascade. kNever when the wheel is empty.
  int64_t NextWorkTick() const;

  // Processes the ticks from elapsed() up to and including `last_tick`:
  // cascades upper buckets as their time comes and hands every node due at or
  // before `last_tick` to `expire(node)`, earliest tick first and in insertion
  // order within a tick, after unlinking it. Stops once `budget` nodes have
  // been expired or cascaded (in a bucket being expired, once it has looked
  // at that many slots, cancelled nodes' tombstones included), or when
  // `expire` returns false, and then returns false: call again to go on.
  // Returns true when everything up to `last_tick` is done; elapsed() is then
  // max(elapsed(), last_tick + 1). While `expire(node)` runs, elapsed() is the
  // tick being expired, and `expire` may Insert and Remove freely (see
  // "Expiring a bucket" above): a node filed for a later tick up to `last_tick`
  // is handed out in that tick's turn; one filed for the tick being expired (or
  // overdue) after the nodes the bucket held, since the tick's bucket has work
  // again.
  template <typename F>
  bool Advance(int64_t last_tick, int64_t budget, F&& expire);

  // Expiry within a tick, for a worker that wakes for deadlines rather than
  // tick ends (TimerOptions::slack below one tick).
  //
  // The earliest OrderKey() of the nodes due at `tick`, which must be
  // elapsed() or later in its turn of level 0 (after Advance() has returned
  // true, I4 puts every node due there in its level-0 bucket); kNever when
  // there are none or `tick` is outside the turn; INT64_MIN when a reset()
  // moved the first one since the sort (look now). Sorts the bucket (ties in
  // insertion order) when nodes were added out of order since it was last
  // sorted: O(k log k) for k nodes then, else O(1).
  int64_t EarliestFiledAt(int64_t tick);
  // From now on Advance() also expires each tick's nodes in deadline order
  // (sorting each level-0 bucket before it expires it), as a worker that
  // wakes within ticks does.
  void SortEachTick() { sort_each_tick_ = true; }
  // Hands `expire` the nodes of elapsed()'s level-0 bucket whose OrderKey()
  // is at or before `deadline`, earliest first (and those a reset() moved
  // since the sort on the way), unlinking each; elapsed() does not move, and
  // the later nodes stay for a later call or for Advance(). Call
  // EarliestFiledAt(elapsed()) first (it sorts). Budget and result as for
  // Advance(); `expire` may Insert and Remove, and what it files into
  // elapsed()'s bucket waits for the next call.
  template <typename F>
  bool ExpireFiledBy(int64_t deadline, int64_t budget, F&& expire);

  // Unlinks every node, calling `f(node)` for each (the nodes of a bucket
  // being expired too). For stop(): out of line, one indirect call a node.
  void DrainAll(absl::FunctionRef<void(TimeoutNode*)> f);
  // Calls `f(node)` for every linked node (the nodes of a bucket being
  // expired too), and changes nothing (f must not Insert or Remove).
  // O(size() + occupied buckets).
  void ForEach(absl::FunctionRef<void(TimeoutNode*)> f) const;

 private:
  // Reads the buckets and bitmaps to check I1 to I3 (tests/wheel_test_peer.h).
  friend class WheelTestPeer;

  static constexpr int kIndexBits = 28;
  static constexpr uint32_t kIndexMask = (uint32_t{1} << kIndexBits) - 1;
  static constexpr uint32_t kUnlinked = uint32_t{kUnlinkedLevel} << kIndexBits;
  static_assert(kUnlinked == TimeoutNode::kUnlinked);
  // Nodes are prefetched this many slots ahead of the one being handled.
  static constexpr uint32_t kPrefetchDistance = 8;

  // A bucket's `last_key` while every append came at or after the one
  // before it; kOutOfOrder once one came before (or at the very end of the
  // range, which only costs SortBucket() a pass).
  static constexpr int64_t kOutOfOrder = INT64_MAX;

  struct Bucket {
    TimeoutNode** slots = nullptr;  // malloc'd; nullptr entries are tombstones
    // The latest key (Insert()'s `filed_by`) appended since the bucket was
    // last empty or sorted (the last node's), or kOutOfOrder: while it is
    // not, the live slots are in deadline order, ties in insertion order
    // (reset()s aside), so SortBucket() need not look at the nodes. Appends
    // in order (a burst for one instant, deadlines that grow with the calls)
    // are the common case. Zero in a calloc'd bucket: conservative only.
    int64_t last_key = 0;
    uint32_t size = 0;  // slots in use, tombstones included
    uint32_t capacity = 0;
    uint32_t live = 0;   // non-null slots
    uint32_t begin = 0;  // every slot before it is a tombstone
  };
  struct Level {
    int shift = 0;  // log2 of a bucket's width in ticks
    int bits = 0;   // log2 of the number of buckets
    Bucket* buckets = nullptr;
    uint64_t* occupied = nullptr;   // one bit per bucket: live > 0
    uint64_t* allocated = nullptr;  // one bit per bucket: slots != nullptr
  };

  // The level is a function of the highest bit in which due_tick and
  // elapsed differ, looked up rather than computed: a division by
  // kUpperLevelBits and two branches per filed node otherwise.
  int LevelFor(int64_t due_tick) const {
    const uint64_t differ =
        static_cast<uint64_t>(due_tick) ^ static_cast<uint64_t>(elapsed_);
    // Both are non-negative, so bit 63 of differ is clear and the shifted
    // value keeps every bit; `| 1` makes the count defined for differ == 0
    // (one bsr): the result is std::bit_width(differ).
    assert(due_tick >= 0 && elapsed_ >= 0);
    return level_by_width_[63 - std::countl_zero(differ << 1 | 1)];
  }
  int64_t SlotOf(int level, int64_t tick) const {
    const Level& l = levels_[level];
    return (tick >> l.shift) & ((int64_t{1} << l.bits) - 1);
  }
  // Appends `n`, ordered by `key`, to `b` (bucket `slot` of `level`),
  // recording (code, index) in n->where; code is the level, or
  // kOverdueLevel. Inline, like Insert(), which files every node through it.
  void Append(Bucket& b, int level, int64_t slot, int code, TimeoutNode* n,
              int64_t key) {
    if (b.size == b.capacity) [[unlikely]]
      MakeRoom(b, level, slot);
    n->where = static_cast<uint32_t>(code) << kIndexBits | b.size;
    b.slots[b.size++] = n;
    b.last_key = key >= b.last_key ? key : kOutOfOrder;
    if (&b == sorted_bucket_) [[unlikely]]
      sorted_bucket_ = nullptr;
    ++b.live;
    ++size_;
  }
  // Makes room for one more slot in a full `b`: compacts out tombstones, or
  // grows the array (and marks it allocated). Out of line: once a doubling.
  [[gnu::noinline]] void MakeRoom(Bucket& b, int level, int64_t slot);
  // Bucket arrays of kMappedBytes or more are mmap'd (GrowSlots() says why).
  static constexpr size_t kMappedBytes = 4096;
  static bool Mapped(uint32_t capacity);
  // Grows b's array to `grown` slots, keeping its contents; aborts with a
  // message when memory runs out.
  static void GrowSlots(Bucket& b, uint32_t grown);
  static void FreeSlots(Bucket& b);
  // Keeps the `allocated` bitmap in step with b.slots.
  void SetAllocated(int level, int64_t slot, bool on);
  // Takes the node out of slot `i` of `b` (non-null), leaving a tombstone.
  TimeoutNode* TakeSlot(Bucket& b, uint32_t i) {
    TimeoutNode* n = b.slots[i];
    b.slots[i] = nullptr;
    n->where = kUnlinked;
    --b.live;
    --size_;
    return n;
  }
  // kWholeNode: the walk expires the nodes (ExpireRun(): state, task: the
  // whole cell), else it cascades them (Cascade(): deadline, state, where:
  // the first 16 bytes, one line, see kNodeCellSize).
  template <bool kWholeNode>
  static void Prefetch(TimeoutNode* const* slots, uint32_t size, uint32_t i) {
    if (i + kPrefetchDistance < size)
      PrefetchNode<kWholeNode>(slots[i + kPrefetchDistance]);
  }
  template <bool kWholeNode>
  static void PrefetchNode(const TimeoutNode* node) {
    // Write intent: the callbacks write `where` (and an expiry the
    // state). Both ends of an expiring node, in case it straddles two
    // cache lines (an unpooled node need not be aligned to its size).
    // Integer arithmetic, since the slot may be a tombstone (null).
    const auto n = reinterpret_cast<uintptr_t>(node);
    __builtin_prefetch(reinterpret_cast<const void*>(n), 1);
    if constexpr (kWholeNode) {
      __builtin_prefetch(
          reinterpret_cast<const void*>(n + sizeof(TimeoutNode) - 1), 1);
    }
  }
  // Called when `b` (of `level`, at `slot`) may have emptied or filled with
  // tombstones: resets an empty bucket and clears its bit, compacts one with
  // more tombstones than live nodes.
  void Tidy(Bucket& b, int level, int64_t slot);
  void Compact(Bucket& b);
  // Moves the live nodes of upper bucket `b` from b.begin down, in order,
  // each Insert()ed by its deadline into a lower level, or to a later bucket
  // if a reset() moved it (never back into `b`: elapsed has its digit at
  // `level` now); false if the budget stopped it first.
  bool Cascade(Bucket& b, int level, int64_t slot, int64_t budget,
               int64_t& ops);
  // The first occupied bucket of `level` at or after elapsed's digit, or -1.
  int64_t NextOccupied(int level) const;
  // The first tick of bucket `slot` of `level`, in elapsed's current turn.
  int64_t SlotStart(int level, int64_t slot) const;
  // Finds the bucket Advance() must handle next, the one with the earliest
  // start, an upper one on a tie (cascade before expiring); false when none.
  bool NextWork(int* level, int64_t* slot, int64_t* tick) const;
  static bool Holds(const Bucket& b, uint32_t index, const TimeoutNode* n);
  // The occupied bucket of `level` that holds `node` at `index` (Holds()):
  // for a node whose deadline a reset() moved since it was filed.
  int64_t FindSlot(int level, uint32_t index, const TimeoutNode* node) const;
  // Where a node with deadline `d` goes in the order of the level-0 bucket
  // of `tick`: at `d`; first (INT64_MIN: as soon as the tick is in
  // progress) if `d` is due before `tick` and the node is not overdue: one
  // filed by a later instant than its deadline (Insert()), or moved.
  int64_t OrderKey(const TimeoutNode* n, int64_t d, int64_t tick) const;

  TickDivider divider_;
  int bits0_;
  int num_levels_;
  // level_by_width_[w]: the level of a node whose due tick first differs
  // from elapsed in bit w - 1 (0: not at all), for w in [0, 63].
  uint8_t level_by_width_[64];
  Level levels_[kMaxLevels];
  int64_t elapsed_ = 0;
  int64_t size_ = 0;
  int64_t origin_ = 0;
  // The level-0 bucket last sorted, while its order holds: an append
  // forgets it, as does an emptied bucket; removals and compactions keep
  // the order. (Its size is no proof that nothing was appended: a compaction
  // that makes room can bring it back to its size at the sort.)
  const Bucket* sorted_bucket_ = nullptr;
  bool sort_each_tick_ = false;
  // The level-0 bucket being expired, taken off slot run_slot_ while its
  // nodes are handed out (see "Expiring a bucket"); null otherwise.
  Bucket* run_ = nullptr;
  int64_t run_slot_ = -1;
  // Hands `expire` the live nodes of level-0 bucket `slot` in order,
  // unlinking each, with the bucket off its slot meanwhile; puts back what
  // is left. False if the budget or `expire` stopped it first. kByDeadline:
  // the bucket is elapsed()'s and sorted; stop at the first node a reset()
  // has not moved whose OrderKey() is after `filed_by` (a moved one goes to
  // `expire`, whose claim files it again); else hand out all of them.
  template <bool kByDeadline, typename F>
  bool ExpireRun(int64_t slot, int64_t filed_by, int64_t budget, int64_t& ops,
                 F& expire);
  // Puts `run`, what is left of the bucket taken off level-0 slot `slot`,
  // back there, followed by the nodes filed into that slot meanwhile;
  // `sorted`: the run was EarliestFiledAt()'s sorted bucket.
  void Reattach(Bucket& run, int64_t slot, bool sorted);
  // Sorts level-0 bucket `b`, of `tick`, by OrderKey() (ties in insertion
  // order) unless it is sorted already. Each deadline is read once, into
  // sort_keys_: a reset() may change it meanwhile.
  void SortBucket(Bucket& b, int64_t tick);
  struct SortKey;  // a node, its key and its index (wheel.cc)
  std::vector<SortKey> sort_keys_;
};

[[gnu::always_inline]] inline void Wheel::Insert(TimeoutNode* node,
                                                 int64_t filed_by) {
  assert(!Linked(node));
  const int64_t due = DueTickAt(filed_by);
  const bool overdue = due < elapsed_;
  const int level = overdue ? 0 : LevelFor(due);
  const int64_t slot = SlotOf(level, overdue ? elapsed_ : due);
  Level& l = levels_[level];
  Bucket& b = l.buckets[slot];
  if (b.live == 0) l.occupied[slot >> 6] |= uint64_t{1} << (slot & 63);
  Append(b, level, slot, overdue ? kOverdueLevel : level, node, filed_by);
}

template <bool kByDeadline, typename F>
bool Wheel::ExpireRun(int64_t slot, int64_t filed_by, int64_t budget,
                      int64_t& ops, F& expire) {
  Bucket& b = levels_[0].buckets[slot];
  const bool sorted = sorted_bucket_ == &b;
  if (sorted) sorted_bucket_ = nullptr;
  // Take the bucket off: the slot is empty (occupancy bit and all) until
  // Reattach(), and its array, if an Insert needs one, is a new one.
  Bucket run = b;
  b = Bucket{};
  b.last_key = INT64_MIN;
  levels_[0].occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
  run_ = &run;
  run_slot_ = slot;
  // What a task may reach while `expire` runs (size(), and a Remove(), a
  // DrainAll() or a ForEach() of the run, through run_) finds each node
  // handed out unlinked, its slot a tombstone and size() without it: all
  // written before the call. The run's own bookkeeping waits for the end of
  // the loop: its array and size hold still (what a task files goes to the
  // slot's new bucket; a Remove() or DrainAll() of the run only leaves
  // tombstones), a `begin` that lags only makes a reader skip more
  // tombstones, and `live` is only ever decremented, by the loop and by a
  // Remove(), so the order of the decrements does not matter.
  //
  // The budget bounds the slots the loop looks at, tombstones included, so
  // that the loop tests one end (a slice with tombstones expires fewer
  // nodes, never more), and it prefetches while a slot kPrefetchDistance
  // ahead is in the array: the loop steps a pointer against those two
  // bounds, worked out before it, and that is all the bookkeeping a slot
  // costs besides its node. The callback is copied into the loop's frame:
  // a task's call cannot change a local whose address it never sees, so
  // what the callback captured is never reloaded from its owner.
  TimeoutNode** const slots = run.slots;
  const uint32_t size = run.size;
  const auto room = static_cast<uint64_t>(budget - ops);
  const uint32_t end =
      size - run.begin > room ? run.begin + static_cast<uint32_t>(room) : size;
  TimeoutNode** p = slots + run.begin;
  TimeoutNode** const stop = slots + end;
  TimeoutNode** const prefetch_stop =
      slots + (size > kPrefetchDistance ? size - kPrefetchDistance : 0);
  F fn = expire;
  uint32_t taken = 0;
  bool done = true;
  for (; p < stop; ++p) {
    if (p < prefetch_stop) PrefetchNode<true>(p[kPrefetchDistance]);
    TimeoutNode* n = *p;
    if (n == nullptr) continue;
    if constexpr (kByDeadline) {
      int64_t d;  // sorted: the rest later, unless a reset() moved it
      if (n->UnmovedDeadline(&d) && OrderKey(n, d, elapsed_) > filed_by) break;
    }
    ++taken;
    *p = nullptr;
    n->where = kUnlinked;
    --size_;
    if (!fn(n)) {
      ++p;
      done = false;
      break;
    }
  }
  const auto i = static_cast<uint32_t>(p - slots);
  if (i == end && end < size) done = false;  // the budget is spent
  run.begin = i;
  run.live -= taken;
  ops += taken;
  run_ = nullptr;
  Reattach(run, slot, sorted);
  return done;
}

template <typename F>
bool Wheel::ExpireFiledBy(int64_t deadline, int64_t budget, F&& expire) {
  assert(sorted_bucket_ == &levels_[0].buckets[SlotOf(0, elapsed_)]);
  int64_t ops = 0;
  return ExpireRun<true>(SlotOf(0, elapsed_), deadline, budget, ops, expire);
}

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
    Bucket& b = levels_[level].buckets[slot];
    if (level == 0) {
      if (sort_each_tick_) SortBucket(b, elapsed_);
      if (!ExpireRun<false>(slot, 0, budget, ops, expire)) return false;
      continue;
    }
    if (!Cascade(b, level, slot, budget, ops)) return false;
  }
  if (last_tick >= elapsed_) elapsed_ = last_tick + 1;
  return true;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_WHEEL_H_
