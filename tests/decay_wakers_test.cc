// tests/decay_wakers_test.cc
// -----------------------------------------------------------------------------
// DecayWakers (worker/decay_wakers.h): a call reaches the owner's first
// registration only, and never another owner's; an owner that never had a
// registration leaves the decay to its own calls; once its last
// registration has gone it is orphaned until another comes; Remove()
// returns only once a call to the registration it removes has ended.

#include "tickwheel/worker/decay_wakers.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace tickwheel::internal {
namespace {

using Outcome = DecayWakers::Outcome;

void Count(void* n) { static_cast<std::atomic<int>*>(n)->fetch_add(1); }

TEST(DecayWakersTest, OnlyTheFirstRegistrationIsWoken) {
  DecayWakers wakers;
  std::atomic<int> first{0}, second{0};
  wakers.Add(&Count, &first);
  wakers.Add(&Count, &second);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken);
  EXPECT_EQ(first.load(), 2);
  EXPECT_EQ(second.load(), 0);
  // The first goes: the next one is called.
  wakers.Remove(&first);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken);
  EXPECT_EQ(second.load(), 1);
  wakers.Remove(&second);
}

TEST(DecayWakersTest, OwnersDoNotWakeEachOthersRegistrations) {
  DecayWakers a, b;
  std::atomic<int> woken{0};
  a.Add(&Count, &woken);
  EXPECT_EQ(b.WakeOne(), Outcome::kNoWorker);
  EXPECT_EQ(woken.load(), 0);
  a.Remove(&woken);
}

TEST(DecayWakersTest, AnOwnerThatNeverHadARegistrationDecaysByItself) {
  DecayWakers wakers;
  EXPECT_EQ(wakers.WakeOne(), Outcome::kNoWorker);
}

TEST(DecayWakersTest, TheLastRegistrationGoingOrphansTheOwnerUntilOneComes) {
  DecayWakers wakers;
  std::atomic<int> one{0}, two{0};
  wakers.Add(&Count, &one);
  wakers.Add(&Count, &two);
  wakers.Remove(&one);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken);  // `two` is left
  wakers.Remove(&two);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kOrphaned);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kOrphaned);
  wakers.Add(&Count, &one);
  EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken);
  wakers.Remove(&one);
}

TEST(DecayWakersTest, RemoveWaitsForACallInProgress) {
  DecayWakers wakers;
  struct Gate {
    std::atomic<bool> in_call{false};
    std::atomic<bool> release{false};
  } gate;
  wakers.Add(
      [](void* arg) {
        auto* g = static_cast<Gate*>(arg);
        g->in_call.store(true);
        while (!g->release.load()) std::this_thread::yield();
      },
      &gate);
  std::thread caller([&] { EXPECT_EQ(wakers.WakeOne(), Outcome::kWoken); });
  while (!gate.in_call.load()) std::this_thread::yield();
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    wakers.Remove(&gate);
    removed.store(true);
  });
  // Remove() cannot return while the call is in progress, however long it
  // is given.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(removed.load());
  gate.release.store(true);
  caller.join();
  remover.join();
  EXPECT_TRUE(removed.load());
}

}  // namespace
}  // namespace tickwheel::internal
