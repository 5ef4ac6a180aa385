#include "timer/wheel.h"

#include <bit>
#include <cassert>
#include <cstdlib>
#include <new>
#include <type_traits>

#include <fmt/format.h>

namespace tickwheel::internal {

int Wheel::NormalizeTicksPerWheel(int ticks_per_wheel) {
  assert(ticks_per_wheel >= 1 && ticks_per_wheel <= kMaxTicksPerWheel);
  return static_cast<int>(std::bit_ceil(static_cast<uint32_t>(ticks_per_wheel)));
}

void Wheel::FreeDeleter::operator()(Bucket* p) const { std::free(p); }

Wheel::Wheel(int ticks_per_wheel)
    : buckets_(static_cast<Bucket*>(std::calloc(ticks_per_wheel, sizeof(Bucket)))),
      num_buckets_(ticks_per_wheel),
      mask_(ticks_per_wheel - 1),
      bits_(std::countr_zero(static_cast<uint32_t>(ticks_per_wheel))) {
  assert(std::has_single_bit(static_cast<uint32_t>(ticks_per_wheel)));
  // An all-zero Bucket is an empty list, which is what calloc hands out.
  static_assert(std::is_trivially_copyable_v<Bucket>);
  if (buckets_ == nullptr) throw std::bad_alloc();
}

int64_t Wheel::DueTick(int64_t deadline, int64_t tick_nanos) {
  if (deadline <= 0) return 0;
  // ceil(deadline / tick) - 1, written so that it cannot overflow.
  return deadline / tick_nanos + (deadline % tick_nanos != 0 ? 1 : 0) - 1;
}

void Wheel::Insert(TimeoutNode* node, int64_t due_tick, int64_t current_tick) {
  node->due_tick = due_tick < current_tick ? current_tick : due_tick;
  Bucket& bucket = buckets_[node->due_tick & mask_];
  node->prev = bucket.tail;
  node->next.store(nullptr, std::memory_order_relaxed);
  if (bucket.tail != nullptr) {
    bucket.tail->next.store(node, std::memory_order_relaxed);
  } else {
    bucket.head = node;
  }
  bucket.tail = node;
  node->in_bucket = true;
  ++size_;
}

void Wheel::Remove(TimeoutNode* node) {
  assert(node->in_bucket);
  Bucket& bucket = buckets_[node->due_tick & mask_];
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
  node->prev = nullptr;
  node->next.store(nullptr, std::memory_order_relaxed);
  node->in_bucket = false;
  --size_;
}

std::string Wheel::CheckInvariants(int64_t current_tick) const {
  int64_t counted = 0;
  for (int64_t b = 0; b < num_buckets_; ++b) {
    const Bucket& bucket = buckets_[b];
    const TimeoutNode* prev = nullptr;
    for (const TimeoutNode* n = bucket.head; n != nullptr; n = Next(n)) {
      if (!n->in_bucket) {
        return fmt::format("bucket {}: node {} linked but in_bucket=false", b,
                           fmt::ptr(n));
      }
      if (n->prev != prev) {
        return fmt::format("bucket {}: node {} prev={} expected {}", b,
                           fmt::ptr(n), fmt::ptr(n->prev), fmt::ptr(prev));
      }
      if ((n->due_tick & mask_) != b ||
          n->due_tick < current_tick) {
        return fmt::format(
            "bucket {}: node {} deadline={} due_tick={} misplaced for tick={} "
            "(L={})",
            b, fmt::ptr(n), n->deadline, n->due_tick, current_tick,
            num_buckets_);
      }
      prev = n;
      ++counted;
    }
    if (bucket.tail != prev) {
      return fmt::format("bucket {}: tail={} but last node is {}", b,
                         fmt::ptr(bucket.tail), fmt::ptr(prev));
    }
  }
  if (counted != size_) {
    return fmt::format("size()={} but {} nodes are linked (L={})", size_,
                       counted, num_buckets_);
  }
  return "";
}

}  // namespace tickwheel::internal
