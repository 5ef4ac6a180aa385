// worker/decay_wakers.cc

#include "tickwheel/worker/decay_wakers.h"

#include <algorithm>

#include "tickwheel/base/fork_guard.h"

namespace tickwheel::internal {

DecayWakers::Table& DecayWakers::Shared() {
  static Table* table = [] {
    auto* t = new Table;
    HoldAcrossFork(&t->mu, &DecayWakers::ForgetInChild, t);
    return t;
  }();
  return *table;
}

void DecayWakers::ForgetInChild(void* table) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<Table*>(table)->registrations.clear();
}

DecayWakers::DecayWakers() : table_(Shared()) {}

void DecayWakers::Add(void (*wake)(void*), void* arg) {
  MutexLock lock(&table_.mu);
  table_.registrations.push_back({this, wake, arg});
  orphaned_ = false;
}

void DecayWakers::Remove(void* arg) {
  MutexLock lock(&table_.mu);
  auto& r = table_.registrations;
  r.erase(std::remove_if(r.begin(), r.end(),
                         [&](const Registration& x) {
                           return x.owner == this && x.arg == arg;
                         }),
          r.end());
  orphaned_ = std::none_of(r.begin(), r.end(), [&](const Registration& x) {
    return x.owner == this;
  });
}

DecayWakers::Outcome DecayWakers::WakeOne() {
  MutexLock lock(&table_.mu);
  for (const Registration& r : table_.registrations) {
    if (r.owner == this) {
      r.wake(r.arg);
      return Outcome::kWoken;
    }
  }
  return orphaned_ ? Outcome::kOrphaned : Outcome::kNoWorker;
}

}  // namespace tickwheel::internal
