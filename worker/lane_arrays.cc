#include "tickwheel/worker/lane_arrays.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/fork_guard.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {
namespace {

struct FreeArrays {
  Mutex mu;
  // (array, bytes); the vector's own memory comes from malloc, so a
  // push_back under the mutex is fine: malloc's fork handlers run after ours.
  std::vector<std::pair<void*, size_t>> arrays ABSL_GUARDED_BY(mu);
};

FreeArrays& Free() {
  // Never destroyed: lanes may be destroyed during static destruction.
  static FreeArrays* const free_arrays = [] {
    auto* f = new FreeArrays;
    HoldAcrossFork(&f->mu);
    return f;
  }();
  return *free_arrays;
}

}  // namespace

void* TakeLaneArray(size_t bytes, bool* reused) {
  FreeArrays& f = Free();
  {
    MutexLock lock(&f.mu);
    for (size_t i = f.arrays.size(); i-- > 0;) {
      if (f.arrays[i].second == bytes) {
        void* array = f.arrays[i].first;
        f.arrays[i] = f.arrays.back();
        f.arrays.pop_back();
        *reused = true;
        return array;
      }
    }
  }
  *reused = false;
  void* array = ::operator new (bytes, std::align_val_t{64}, std::nothrow);
  if (array != nullptr) std::memset(array, 0, bytes);
  return array;
}

void GiveLaneArray(void* array, size_t bytes) {
  if (array == nullptr) return;
  FreeArrays& f = Free();
  MutexLock lock(&f.mu);
  // Out of memory for the list itself: keep the array out of use rather
  // than free it (see the header).
  try {
    f.arrays.emplace_back(array, bytes);
  } catch (const std::bad_alloc&) {
  }
}

size_t FreeLaneArrays() {
  FreeArrays& f = Free();
  MutexLock lock(&f.mu);
  return f.arrays.size();
}

}  // namespace tickwheel::internal
