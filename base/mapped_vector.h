// base/mapped_vector.h
// -----------------------------------------------------------------------------
// Internal. MappedVector<T>: a std::vector whose large buffers are mapped
// pages of their own (mmap), for the engine's temporary buffers of one entry
// per pending timeout (stop()'s list of what is left).
//
// Why: glibc serves a large malloc() with mmap only until such a block is
// freed; then it raises its threshold to that size, serves the next blocks
// of that size from the heap, and keeps the heap's top when they are freed.
// A stop() of a million timeouts builds buffers of tens of MB; through
// malloc they would stay resident after the caller dropped the result, and
// make the caller's own large blocks stay too. Mapped here, each goes back
// to the kernel when it is freed, and glibc's threshold is left alone.
// Small buffers (below kMappedBytes) go through malloc as usual.
//
// Thread-safety: as std::vector. Out of memory: std::bad_alloc, as
// std::allocator.

#ifndef TICKWHEEL_BASE_MAPPED_VECTOR_H_
#define TICKWHEEL_BASE_MAPPED_VECTOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace tickwheel::internal {

template <typename T>
class MappedAllocator {
 public:
  using value_type = T;
  // Buffers from this size on are mapped pages of their own.
  static constexpr size_t kMappedBytes = size_t{1} << 20;

  MappedAllocator() = default;
  template <typename U>
  MappedAllocator(const MappedAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    void* p;
    if (bytes >= kMappedBytes) {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) p = nullptr;
    } else {
      p = std::malloc(bytes == 0 ? 1 : bytes);
    }
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kMappedBytes) {
      munmap(p, bytes);
    } else {
      std::free(p);
    }
  }
  template <typename U>
  bool operator==(const MappedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using MappedVector = std::vector<T, MappedAllocator<T>>;

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_MAPPED_VECTOR_H_
