#include "timer/wheel.h"

#include <bit>
#include <cassert>
#include <cstdlib>
#include <new>

#include <fmt/format.h>

namespace tickwheel::internal {

int Wheel::NormalizeTicksPerWheel(int ticks_per_wheel) {
  assert(ticks_per_wheel >= 1 && ticks_per_wheel <= kMaxTicksPerWheel);
  return static_cast<int>(std::bit_ceil(static_cast<uint32_t>(ticks_per_wheel)));
}

int64_t Wheel::DueTick(int64_t deadline, int64_t tick_nanos) {
  if (deadline <= 0) return 0;
  // ceil(deadline / tick) - 1, written so that it cannot overflow.
  return deadline / tick_nanos + (deadline % tick_nanos != 0 ? 1 : 0) - 1;
}

Wheel::Wheel(int ticks_per_wheel)
    : bits0_(std::countr_zero(static_cast<uint32_t>(ticks_per_wheel))) {
  assert(std::has_single_bit(static_cast<uint32_t>(ticks_per_wheel)));
  // Levels until one holds bit 62, the highest bit of a non-negative tick.
  num_levels_ = 1;
  while (bits0_ + kUpperLevelBits * (num_levels_ - 1) <= 62) ++num_levels_;
  for (int i = 0; i < num_levels_; ++i) {
    Level& l = levels_[i];
    l.shift = i == 0 ? 0 : bits0_ + kUpperLevelBits * (i - 1);
    l.bits = i == 0 ? bits0_ : kUpperLevelBits;
    const size_t slots = size_t{1} << l.bits;
    // calloc: an all-zero Bucket is an empty list, and untouched pages of a
    // huge level 0 cost no memory.
    l.buckets = static_cast<Bucket*>(std::calloc(slots, sizeof(Bucket)));
    l.occupied = static_cast<uint64_t*>(
        std::calloc((slots + 63) / 64, sizeof(uint64_t)));
    if (l.buckets == nullptr || l.occupied == nullptr) {
      for (int j = 0; j <= i; ++j) {
        std::free(levels_[j].buckets);
        std::free(levels_[j].occupied);
      }
      throw std::bad_alloc();
    }
  }
}

Wheel::~Wheel() {
  for (int i = 0; i < num_levels_; ++i) {
    std::free(levels_[i].buckets);
    std::free(levels_[i].occupied);
  }
}

int Wheel::LevelFor(int64_t due_tick) const {
  const uint64_t differ =
      static_cast<uint64_t>(due_tick) ^ static_cast<uint64_t>(elapsed_);
  if ((differ >> bits0_) == 0) return 0;
  const int highest = 63 - std::countl_zero(differ);
  return 1 + (highest - bits0_) / kUpperLevelBits;
}

void Wheel::Insert(TimeoutNode* node, int64_t due_tick) {
  node->due_tick = due_tick < elapsed_ ? elapsed_ : due_tick;
  node->level = static_cast<uint8_t>(LevelFor(node->due_tick));
  const int64_t slot = SlotOf(node->level, node->due_tick);
  Level& l = levels_[node->level];
  Bucket& bucket = l.buckets[slot];
  node->prev = bucket.tail;
  node->next.store(nullptr, std::memory_order_relaxed);
  if (bucket.tail != nullptr) {
    bucket.tail->next.store(node, std::memory_order_relaxed);
  } else {
    bucket.head = node;
    l.occupied[slot >> 6] |= uint64_t{1} << (slot & 63);
  }
  bucket.tail = node;
  node->in_bucket = true;
  ++size_;
}

void Wheel::Remove(TimeoutNode* node) {
  assert(node->in_bucket);
  const int64_t slot = SlotOf(node->level, node->due_tick);
  Level& l = levels_[node->level];
  Bucket& bucket = l.buckets[slot];
  TimeoutNode* next = Next(node);
  TimeoutNode* prev = node->prev;
  if (prev != nullptr) {
    prev->next.store(next, std::memory_order_relaxed);
  } else {
    bucket.head = next;
  }
  if (next != nullptr) {
    next->prev = prev;
  } else {
    bucket.tail = prev;
  }
  if (bucket.head == nullptr) {
    l.occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
  }
  node->prev = nullptr;
  node->next.store(nullptr, std::memory_order_relaxed);
  node->in_bucket = false;
  --size_;
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
  bool found = false;
  for (int i = 0; i < num_levels_; ++i) {
    const int64_t s = NextOccupied(i);
    if (s < 0) continue;
    const int64_t start = SlotStart(i, s);
    if (!found || start <= *tick) {
      *level = i;
      *slot = s;
      *tick = start;
      found = true;
    }
  }
  return found;
}

int64_t Wheel::NextWorkTick() const {
  int level;
  int64_t slot, tick;
  return NextWork(&level, &slot, &tick) ? tick : kNever;
}

std::string Wheel::CheckInvariants() const {
  int64_t counted = 0;
  for (int level = 0; level < num_levels_; ++level) {
    const Level& l = levels_[level];
    const int64_t slots = int64_t{1} << l.bits;
    for (int64_t s = 0; s < slots; ++s) {
      const Bucket& bucket = l.buckets[s];
      const bool bit = (l.occupied[s >> 6] >> (s & 63)) & 1;
      if (bit != (bucket.head != nullptr)) {
        return fmt::format("level {} bucket {}: occupancy bit {} but head={}",
                           level, s, bit, fmt::ptr(bucket.head));
      }
      const TimeoutNode* prev = nullptr;
      for (const TimeoutNode* n = bucket.head; n != nullptr; n = Next(n)) {
        if (!n->in_bucket || n->prev != prev) {
          return fmt::format(
              "level {} bucket {}: node {} in_bucket={} prev={} expected {}",
              level, s, fmt::ptr(n), n->in_bucket, fmt::ptr(n->prev),
              fmt::ptr(prev));
        }
        if (n->level != level || SlotOf(level, n->due_tick) != s ||
            n->due_tick < elapsed_ || LevelFor(n->due_tick) > level) {
          return fmt::format(
              "level {} bucket {}: node {} deadline={} due_tick={} level={} "
              "misplaced at elapsed={} (L={})",
              level, s, fmt::ptr(n), n->deadline, n->due_tick, n->level,
              elapsed_, ticks_per_wheel());
        }
        prev = n;
        ++counted;
      }
      if (bucket.tail != prev) {
        return fmt::format("level {} bucket {}: tail={} but last node is {}",
                           level, s, fmt::ptr(bucket.tail), fmt::ptr(prev));
      }
    }
  }
  if (counted != size_) {
    return fmt::format("size()={} but {} nodes are linked (L={})", size_,
                       counted, ticks_per_wheel());
  }
  return "";
}

}  // namespace tickwheel::internal
