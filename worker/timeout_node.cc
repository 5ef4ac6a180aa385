#include "tickwheel/worker/timeout_node.h"

#include <cstdio>
#include <cstdlib>

namespace tickwheel::internal {

void RefCountOverflow() {
  std::fprintf(stderr,
               "tickwheel: more than %u handles to one Timeout are alive at "
               "once; keep fewer copies (share one instead)\n",
               TimeoutNode::kMaxRefs - 1);
  std::abort();
}

}  // namespace tickwheel::internal
