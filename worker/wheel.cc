#include "tickwheel/worker/wheel.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tickwheel::internal {

struct Wheel::SortKey {
  int64_t key;
  uint32_t index;
  TimeoutNode* node;
};

int Wheel::NormalizeTicksPerWheel(int ticks_per_wheel) {
  assert(ticks_per_wheel >= 1 && ticks_per_wheel <= kMaxTicksPerWheel);
  return static_cast<int>(
      std::bit_ceil(static_cast<uint32_t>(ticks_per_wheel)));
}

Wheel::Wheel(int ticks_per_wheel, int64_t tick_nanos)
    : divider_(tick_nanos),
      bits0_(std::countr_zero(static_cast<uint32_t>(ticks_per_wheel))) {
  assert(std::has_single_bit(static_cast<uint32_t>(ticks_per_wheel)));
  assert(tick_nanos > 0);
  // Levels until one holds bit 62, the highest bit of a non-negative tick.
  num_levels_ = 1;
  while (bits0_ + kUpperLevelBits * (num_levels_ - 1) <= 62) ++num_levels_;
  for (int width = 0; width < 64; ++width) {
    level_by_width_[width] = static_cast<uint8_t>(
        width <= bits0_ ? 0 : 1 + (width - 1 - bits0_) / kUpperLevelBits);
  }
  for (int i = 0; i < num_levels_; ++i) {
    Level& l = levels_[i];
    l.shift = i == 0 ? 0 : bits0_ + kUpperLevelBits * (i - 1);
    l.bits = i == 0 ? bits0_ : kUpperLevelBits;
    const size_t slots = size_t{1} << l.bits;
    // calloc: an all-zero Bucket is empty, and untouched pages of a huge
    // level 0 cost no memory.
    l.buckets = static_cast<Bucket*>(std::calloc(slots, sizeof(Bucket)));
    l.occupied = static_cast<uint64_t*>(
        std::calloc((slots + 63) / 64, sizeof(uint64_t)));
    l.allocated = static_cast<uint64_t*>(
        std::calloc((slots + 63) / 64, sizeof(uint64_t)));
    if (l.buckets == nullptr || l.occupied == nullptr ||
        l.allocated == nullptr) {
      for (int j = 0; j <= i; ++j) {
        std::free(levels_[j].buckets);
        std::free(levels_[j].occupied);
        std::free(levels_[j].allocated);
      }
      throw std::bad_alloc();
    }
  }
}

Wheel::~Wheel() {
  for (int i = 0; i < num_levels_; ++i) {
    const Level& l = levels_[i];
    const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
    // The bitmap, not the buckets: a huge level 0 has pages never touched.
    for (int64_t w = 0; w < words; ++w) {
      for (uint64_t bits = l.allocated[w]; bits != 0; bits &= bits - 1) {
        FreeSlots(l.buckets[w * 64 + std::countr_zero(bits)]);
      }
    }
    std::free(l.buckets);
    std::free(l.occupied);
    std::free(l.allocated);
  }
}

bool Wheel::Mapped(uint32_t capacity) {
  return size_t{capacity} * sizeof(TimeoutNode*) >= kMappedBytes;
}

// Bucket arrays of kMappedBytes or more are mmap'd and grown with mremap: the
// pages move instead of being copied, the untouched half of a doubled array
// costs no memory, and a freed array goes back to the system at once. One
// page, not more: arrays the allocator served would, once freed, stay at the
// top of the worker thread's malloc arena, which glibc's malloc_trim() does
// not give back (it trims the main arena's top only), so the slots of a burst
// of timeouts would stay resident long after the burst was cancelled. Below a
// page a bucket holds at most 256 nodes, and a system call per doubling above
// it is small beside filing the nodes that filled it.
void Wheel::GrowSlots(Bucket& b, uint32_t grown) {
  const size_t old_bytes = size_t{b.capacity} * sizeof(TimeoutNode*);
  const size_t new_bytes = size_t{grown} * sizeof(TimeoutNode*);
  void* p;
  if (!Mapped(grown)) {
    p = std::realloc(b.slots, new_bytes);
  } else if (Mapped(b.capacity)) {
    // The kernel moves the pages; nothing is copied or left behind.
    p = mremap(b.slots, old_bytes, new_bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) p = nullptr;
  } else {
    p = mmap(nullptr, new_bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      p = nullptr;
    } else {
      std::memcpy(p, b.slots, size_t{b.size} * sizeof(TimeoutNode*));
      std::free(b.slots);
    }
  }
  if (p == nullptr) {
    std::fprintf(stderr,
                 "tickwheel: out of memory growing a wheel bucket to %u "
                 "slots\n",
                 grown);
    std::abort();
  }
  b.slots = static_cast<TimeoutNode**>(p);
  b.capacity = grown;
}

void Wheel::FreeSlots(Bucket& b) {
  if (Mapped(b.capacity)) {
    munmap(b.slots, size_t{b.capacity} * sizeof(TimeoutNode*));
  } else {
    std::free(b.slots);
  }
  b.slots = nullptr;
  b.capacity = 0;
}

void Wheel::SetAllocated(int level, int64_t slot, bool on) {
  uint64_t& word = levels_[level].allocated[slot >> 6];
  const uint64_t bit = uint64_t{1} << (slot & 63);
  word = on ? word | bit : word & ~bit;
}

void Wheel::MakeRoom(Bucket& b, int level, int64_t slot) {
  if (b.live < b.size - b.begin || b.begin > 0) {
    Compact(b);  // room without growing
    if (b.size < b.capacity) return;
  }
  if (b.capacity > kIndexMask / 2) {
    std::fprintf(stderr, "tickwheel: more than %u timeouts due in one tick\n",
                 kIndexMask);
    std::abort();
  }
  const uint32_t grown = b.capacity == 0 ? 8 : 2 * b.capacity;
  if (b.slots == nullptr) SetAllocated(level, slot, true);
  GrowSlots(b, grown);
}

int64_t Wheel::OrderKey(const TimeoutNode* n, int64_t d, int64_t tick) const {
  return LevelOf(n) == kOverdueLevel || DueTickAt(d) >= tick ? d : INT64_MIN;
}

bool Wheel::Holds(const Bucket& b, uint32_t index, const TimeoutNode* n) {
  return index < b.size && b.slots[index] == n;
}

void Wheel::Remove(TimeoutNode* node) {
  assert(Linked(node));
  const int code = LevelOf(node);
  const uint32_t index = node->where & kIndexMask;
  const int level = code == kOverdueLevel ? 0 : code;
  // A node of the bucket being expired, which is off its slot: the run's
  // array at the node's index tells it from every other node (a node is in
  // one slot, and a slot emptied holds null).
  if (run_ != nullptr && level == 0 && Holds(*run_, index, node)) {
    TakeSlot(*run_, index);  // Reattach() tidies the run
    return;
  }
  // The bucket its deadline names, or elapsed's for an overdue node (I3
  // keeps it there); unless a reset() moved the deadline since the node was
  // filed, when the level's occupied buckets are searched. Any deadline the
  // load returns is a safe guess: the slot at the index decides.
  int64_t slot = SlotOf(
      level, code == kOverdueLevel
                 ? elapsed_
                 : DueTickAt(node->deadline.load(std::memory_order_relaxed)));
  if (!Holds(levels_[level].buckets[slot], index, node)) {
    slot = FindSlot(level, index, node);
  }
  Bucket& b = levels_[level].buckets[slot];
  TakeSlot(b, index);
  Tidy(b, level, slot);
}

int64_t Wheel::FindSlot(int level, uint32_t index,
                        const TimeoutNode* node) const {
  const Level& l = levels_[level];
  const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
  for (int64_t w = 0; w < words; ++w) {
    for (uint64_t bits = l.occupied[w]; bits != 0; bits &= bits - 1) {
      const int64_t slot = w * 64 + std::countr_zero(bits);
      if (Holds(l.buckets[slot], index, node)) return slot;
    }
  }
  std::fprintf(stderr, "tickwheel: a linked timeout is in no wheel bucket\n");
  std::abort();
}

void Wheel::Reattach(Bucket& run, int64_t slot, bool sorted) {
  Level& l = levels_[0];
  Bucket& b = l.buckets[slot];
  if (run.live == 0) {
    // All handed out: the slot keeps whichever array it can reuse.
    if (b.slots == nullptr && run.capacity <= kKeptSlots) {
      b.slots = run.slots;
      b.capacity = run.capacity;
    } else if (run.slots != nullptr) {
      FreeSlots(run);
    }
  } else {
    // What is left runs first, in its order; the nodes filed into the slot
    // meanwhile follow, in theirs. Only they are touched (`where`).
    const bool appended = b.live > 0;
    for (uint32_t i = b.begin; i < b.size; ++i) {
      TimeoutNode* n = b.slots[i];
      if (n == nullptr) continue;
      --size_;  // counted already; Append() counts it again
      Append(
          run, 0, slot, LevelOf(n), n,
          OrderKey(n, n->deadline.load(std::memory_order_relaxed), elapsed_));
    }
    if (b.slots != nullptr) FreeSlots(b);
    b = run;
    if (sorted && !appended) sorted_bucket_ = &b;
  }
  SetAllocated(0, slot, b.slots != nullptr);
  if (b.live > 0) {
    l.occupied[slot >> 6] |= uint64_t{1} << (slot & 63);
    Tidy(b, 0, slot);
  } else {
    b.size = b.begin = 0;
    b.last_key = INT64_MIN;
  }
}

void Wheel::Tidy(Bucket& b, int level, int64_t slot) {
  if (b.live == 0) {
    b.size = b.begin = 0;
    b.last_key = INT64_MIN;
    if (sorted_bucket_ == &b) sorted_bucket_ = nullptr;
    if (b.capacity > kKeptSlots) {
      FreeSlots(b);
      SetAllocated(level, slot, false);
    }
    levels_[level].occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    return;
  }
  const uint32_t tombstones = b.size - b.begin - b.live;
  if (tombstones > b.live && tombstones >= 16) Compact(b);
}

void Wheel::Compact(Bucket& b) {
  // Without tombstones every node's index is its position already: nothing
  // to move, and no node to touch (a bucket of a million would cost a cache
  // miss each).
  if (b.begin == 0 && b.live == b.size) return;
  // Keeps the order, so a sorted bucket stays sorted.
  uint32_t out = 0;
  for (uint32_t i = b.begin; i < b.size; ++i) {
    TimeoutNode* n = b.slots[i];
    if (n == nullptr) continue;
    n->where = (n->where & ~kIndexMask) | out;
    b.slots[out++] = n;
  }
  b.begin = 0;
  b.size = out;
}

void Wheel::SortBucket(Bucket& b, int64_t tick) {
  if (sorted_bucket_ == &b) return;
  // Appended in order since it was last empty or sorted: sorted already,
  // with no node to touch.
  if (b.last_key != kOutOfOrder) {
    sorted_bucket_ = &b;
    return;
  }
  Compact(b);
  // Each key read once: a comparison must not see a reset() change it.
  // Ties in insertion order, which is the index after Compact().
  sort_keys_.clear();
  for (uint32_t i = 0; i < b.size; ++i) {
    TimeoutNode* n = b.slots[i];
    sort_keys_.push_back(
        {OrderKey(n, n->deadline.load(std::memory_order_relaxed), tick), i, n});
  }
  std::sort(sort_keys_.begin(), sort_keys_.end(),
            [](const SortKey& x, const SortKey& y) {
              return x.key != y.key ? x.key < y.key : x.index < y.index;
            });
  for (uint32_t i = 0; i < b.size; ++i) {
    TimeoutNode* n = sort_keys_[i].node;
    n->where = (n->where & ~kIndexMask) | i;
    b.slots[i] = n;
  }
  b.last_key = sort_keys_.back().key;
  // A burst's sort leaves no lasting buffer behind.
  if (sort_keys_.capacity() > kKeptSlots) {
    sort_keys_ = std::vector<SortKey>();
  }
  sorted_bucket_ = &b;
}

int64_t Wheel::EarliestFiledAt(int64_t tick) {
  if (size_ == 0 || tick < elapsed_ ||
      (tick >> bits0_) != (elapsed_ >> bits0_)) {
    return kNever;
  }
  Bucket& b = levels_[0].buckets[SlotOf(0, tick)];
  if (b.live == 0) return kNever;
  SortBucket(b, tick);
  // Removals since the sort may have left tombstones in front.
  while (b.slots[b.begin] == nullptr) ++b.begin;
  const TimeoutNode* first = b.slots[b.begin];
  int64_t d;
  // Moved since the sort: the nodes behind it may be due before its new
  // deadline, and before its old one, which is gone.
  if (!first->UnmovedDeadline(&d)) return INT64_MIN;
  return OrderKey(first, d, tick);
}

int64_t Wheel::NextOccupied(int level) const {
  const Level& l = levels_[level];
  const int64_t from = SlotOf(level, elapsed_);
  const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
  int64_t w = from >> 6;
  // Bits below `from` in its word belong to digits already passed (I3).
  uint64_t bits = l.occupied[w] & (~uint64_t{0} << (from & 63));
  while (true) {
    if (bits != 0) return w * 64 + std::countr_zero(bits);
    if (++w == words) return -1;
    bits = l.occupied[w];
  }
}

int64_t Wheel::SlotStart(int level, int64_t slot) const {
  const Level& l = levels_[level];
  const int top = l.shift + l.bits;  // bits above this level's digit
  const uint64_t turn_start =
      top >= 63 ? 0
                : static_cast<uint64_t>(elapsed_) & ~((uint64_t{1} << top) - 1);
  return static_cast<int64_t>(turn_start +
                              (static_cast<uint64_t>(slot) << l.shift));
}

bool Wheel::NextWork(int* level, int64_t* slot, int64_t* tick) const {
  if (size_ == 0) return false;
  // The best bucket so far lives in locals, and the out-parameters are
  // written once, only when one was found: they are never read, so a
  // caller's uninitialized variables stay unread unless this returns true.
  // (Reading *tick under `found` was correct too, but gcc 12 at -O3 cannot
  // see that and warns: -Wmaybe-uninitialized.)
  int best_level = -1;
  int64_t best_slot = 0;
  int64_t best_tick = 0;
  for (int i = 0; i < num_levels_; ++i) {
    const int64_t s = NextOccupied(i);
    if (s < 0) continue;
    const int64_t start = SlotStart(i, s);
    if (best_level < 0 || start <= best_tick) {
      best_level = i;
      best_slot = s;
      best_tick = start;
    }
  }
  if (best_level < 0) return false;
  *level = best_level;
  *slot = best_slot;
  *tick = best_tick;
  return true;
}

int64_t Wheel::NextWorkTick() const {
  int level;
  int64_t slot, tick;
  return NextWork(&level, &slot, &tick) ? tick : kNever;
}

bool Wheel::Cascade(Bucket& b, int level, int64_t slot, int64_t budget,
                    int64_t& ops) {
  for (uint32_t i = b.begin; i < b.size; ++i) {
    Prefetch<false>(b.slots, b.size, i);
    if (b.slots[i] == nullptr) continue;
    if (ops == budget) {
      b.begin = i;
      return false;
    }
    ++ops;
    TimeoutNode* n = TakeSlot(b, i);
    b.begin = i + 1;
    // By its deadline now: a node a reset() moved lands where it is due.
    Insert(n, n->deadline.load(std::memory_order_relaxed));
  }
  Tidy(b, level, slot);
  return true;
}

void Wheel::DrainAll(absl::FunctionRef<void(TimeoutNode*)> f) {
  auto drain = [&](Bucket& b, int level, int64_t slot) {
    for (uint32_t i = b.begin; i < b.size; ++i) {
      if (b.slots[i] != nullptr) f(TakeSlot(b, i));
    }
    b.begin = b.size;
    Tidy(b, level, slot);
  };
  if (run_ != nullptr) {  // Reattach() tidies it
    for (uint32_t i = run_->begin; i < run_->size; ++i) {
      if (run_->slots[i] != nullptr) f(TakeSlot(*run_, i));
    }
    run_->begin = run_->size;
  }
  for (int level = 0; level < num_levels_; ++level) {
    const Level& l = levels_[level];
    const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
    for (int64_t w = 0; w < words; ++w) {
      while (l.occupied[w] != 0) {
        const int64_t slot = w * 64 + __builtin_ctzll(l.occupied[w]);
        drain(l.buckets[slot], level, slot);  // clears the bit
      }
    }
  }
}

void Wheel::ForEach(absl::FunctionRef<void(TimeoutNode*)> f) const {
  if (run_ != nullptr) {
    for (uint32_t i = run_->begin; i < run_->size; ++i) {
      if (run_->slots[i] != nullptr) f(run_->slots[i]);
    }
  }
  for (int level = 0; level < num_levels_; ++level) {
    const Level& l = levels_[level];
    const int64_t words = ((int64_t{1} << l.bits) + 63) / 64;
    for (int64_t w = 0; w < words; ++w) {
      for (uint64_t bits = l.occupied[w]; bits != 0; bits &= bits - 1) {
        const Bucket& b = l.buckets[w * 64 + __builtin_ctzll(bits)];
        for (uint32_t i = b.begin; i < b.size; ++i) {
          if (b.slots[i] != nullptr) f(b.slots[i]);
        }
      }
    }
  }
}

}  // namespace tickwheel::internal
