#include "tickwheel/base/fork_guard.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

#include "absl/base/thread_annotations.h"

namespace tickwheel::internal {
namespace {

struct Guard {
  std::atomic<Mutex*> mu{nullptr};
  void (*in_child)(void*) = nullptr;
  void* arg = nullptr;
};

// A slot is claimed (count), filled, then published by its mutex pointer
// (release); a handler skips a slot whose pointer it does not see yet.
Guard g_guards[kMaxForkGuards];
std::atomic<int> g_count{0};

int Count() {
  return std::min(g_count.load(std::memory_order_acquire), kMaxForkGuards);
}

void Prepare() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (int i = 0; i < Count(); ++i) {
    if (Mutex* mu = g_guards[i].mu.load(std::memory_order_acquire)) mu->Lock();
  }
}

void Parent() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (int i = Count() - 1; i >= 0; --i) {
    if (Mutex* mu = g_guards[i].mu.load(std::memory_order_acquire)) {
      mu->Unlock();
    }
  }
}

void Child() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (int i = Count() - 1; i >= 0; --i) {
    const Guard& g = g_guards[i];
    if (Mutex* mu = g.mu.load(std::memory_order_acquire)) {
      if (g.in_child != nullptr) g.in_child(g.arg);
      mu->Unlock();
    }
  }
}

}  // namespace

bool HoldAcrossFork(Mutex* mu, void (*in_child)(void*), void* arg) {
  static const bool installed = pthread_atfork(&Prepare, &Parent, &Child) == 0;
  if (!installed) return false;
  const int slot = g_count.fetch_add(1, std::memory_order_acq_rel);
  if (slot >= kMaxForkGuards) return false;
  g_guards[slot].in_child = in_child;
  g_guards[slot].arg = arg;
  g_guards[slot].mu.store(mu, std::memory_order_release);
  return true;
}

}  // namespace tickwheel::internal
