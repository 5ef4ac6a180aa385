// The protocol's out-of-line helpers: the reference-count overflow report and
// the pause of a wait on another thread's stores.

#include "tickwheel/worker/node_state.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>

namespace tickwheel::internal {

void RefCountOverflow() {
  std::fprintf(stderr,
               "tickwheel: more than %u handles to one Timeout are alive at "
               "once; keep fewer copies (share one instead)\n",
               NodeState::kMaxRefs - 1);
  std::abort();
}

void SpinPause(int spins) {
  if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  } else {
    sched_yield();
  }
}

}  // namespace tickwheel::internal
