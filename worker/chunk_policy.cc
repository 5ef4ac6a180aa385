// worker/chunk_policy.cc

#include "tickwheel/worker/chunk_policy.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace tickwheel::internal {

DecayPolicy::Decision DecayPolicy::Decide(std::vector<SpareChunk> spare,
                                          int64_t due_by) {
  std::sort(spare.begin(), spare.end(),
            [](const SpareChunk& a, const SpareChunk& b) {
              return std::greater<char*>()(a.base, b.base);
            });
  Decision decision{{}, kNothingDue};
  size_t left = spare.size();
  int64_t earliest_left = INT64_MAX;
  for (const SpareChunk& chunk : spare) {
    if (left > kKeptFreeChunks && DueAt(chunk.spare_since) <= due_by) {
      decision.release.push_back(chunk.base);
      --left;
    } else {
      earliest_left = std::min(earliest_left, chunk.spare_since);
    }
  }
  if (left > kKeptFreeChunks) decision.next = DueAt(earliest_left);
  return decision;
}

}  // namespace tickwheel::internal
