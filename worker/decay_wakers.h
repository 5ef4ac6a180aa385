// worker/decay_wakers.h
// -----------------------------------------------------------------------------
// Internal. DecayWakers: whom a cell depot (worker/cell_depot.h) tells when a
// decay of its spare chunks becomes due (worker/chunk_policy.h), so that a
// sleeping worker wakes for it; and whether anybody is left to tell.
//
// A timer's worker on the real clock registers itself with the node pool's
// depot while it runs. A call reaches the first registration only. Once the
// last registration has gone, and until another comes, the depot is
// orphaned: no worker will wake to decay it later, so WakeOne() says so and
// the depot gives back what is spare at once. A depot that never had a
// registration is not orphaned: its owner calls Decay() (a test, a worker
// on a test clock, which decays on the passes it makes anyway).
//
// Every depot's registrations are in one process-wide table under one
// mutex: registrations are rare (a worker's start and end), and the mutex is
// held across fork() (base/fork_guard.h), whose child has none of the
// registered threads and so forgets every registration. A wake function is
// called with that mutex held, so that Remove() can promise that no call is
// in progress once it returns: it must not register or remove wakers.
//
// This class is thread-safe.

#ifndef TICKWHEEL_WORKER_DECAY_WAKERS_H_
#define TICKWHEEL_WORKER_DECAY_WAKERS_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {

class DecayWakers {
 public:
  DecayWakers();
  DecayWakers(const DecayWakers&) = delete;
  DecayWakers& operator=(const DecayWakers&) = delete;

  // Registers `wake(arg)`, for the life of `arg`; the owner is no longer
  // orphaned.
  void Add(void (*wake)(void*), void* arg) ABSL_LOCKS_EXCLUDED(table_.mu);
  // Removes the registrations of `arg`; returns once no call to it is in
  // progress. With none left, the owner is orphaned.
  void Remove(void* arg) ABSL_LOCKS_EXCLUDED(table_.mu);

  enum class Outcome {
    kWoken,     // the first registration was called
    kNoWorker,  // none was ever registered: Decay() is the owner's to call
    kOrphaned,  // the last one has gone: give back what is spare now
  };
  // Calls the first registration, if any, and says what the caller must do.
  Outcome WakeOne() ABSL_LOCKS_EXCLUDED(table_.mu);

 private:
  struct Registration {
    const DecayWakers* owner;
    void (*wake)(void*);
    void* arg;
  };
  struct Table {
    Mutex mu;
    std::vector<Registration> registrations ABSL_GUARDED_BY(mu);
  };
  // The one table, never destroyed: depots are not either.
  static Table& Shared();
  static void ForgetInChild(void* table);

  Table& table_;
  bool orphaned_ ABSL_GUARDED_BY(table_.mu) = false;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_DECAY_WAKERS_H_
