// tests/timeout_claim_test.cc
// -----------------------------------------------------------------------------
// The worker's claim of a node to run it (TimeoutNode::ClaimToRun), raced by
// a thread that resets the deadline again and again: a claim never goes by a
// deadline that a reset() had already replaced. After a successful claim the
// deadline cannot change until the worker lets go (a one-shot node is no
// longer pending; a periodic one is held with kBusy), so the deadline the
// node holds right after the claim must be the one the claim compared with
// its limit, and must be within it. One-shot nodes, periodic runs inline
// and periodic runs on an executor, each a few thousand rounds; under
// --config=interleave the claim's marked steps yield and sleep.

#include <atomic>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "tickwheel/worker/timeout_node.h"

namespace tickwheel::internal {
namespace {

constexpr int64_t kLimit = 1000;
constexpr int64_t kDue = 500;     // at or before the limit
constexpr int64_t kLater = 2000;  // past it

enum class Kind { kOneShot, kPeriodicInline, kPeriodicExecutor };

// A thread that resets the node of the current round to kDue and kLater in
// turn, until the round ends. Rounds hand over through `round_`: the
// resetter touches a node only while its round is the current one, and
// acknowledges the end of a round before the node is freed.
class Resetter {
 public:
  Resetter() : thread_([this] { Loop(); }) {}
  ~Resetter() {
    quit_.store(true);
    thread_.join();
  }
  void Start(TimeoutNode* node) {
    node_.store(node, std::memory_order_release);
  }
  // Ends the round: returns once the resetter has let go of the node.
  void End() {
    node_.store(nullptr, std::memory_order_release);
    const int64_t r = round_.fetch_add(1) + 1;
    while (idle_round_.load(std::memory_order_acquire) < r) {
      std::this_thread::yield();
    }
  }
  int64_t resets() const { return resets_.load(); }

 private:
  void Loop() {
    bool later = false;
    while (!quit_.load()) {
      const int64_t r = round_.load(std::memory_order_acquire);
      TimeoutNode* node = node_.load(std::memory_order_acquire);
      if (node != nullptr && round_.load(std::memory_order_acquire) == r) {
        if (node->BeginReset()) {
          node->deadline.store(later ? kLater : kDue,
                               std::memory_order_relaxed);
          node->EndReset();
          resets_.fetch_add(1, std::memory_order_relaxed);
          later = !later;
        }
      }
      idle_round_.store(r, std::memory_order_release);
    }
  }

  std::atomic<TimeoutNode*> node_{nullptr};
  std::atomic<int64_t> round_{0};
  std::atomic<int64_t> idle_round_{0};
  std::atomic<int64_t> resets_{0};
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

void ClaimRounds(Kind kind) {
  Resetter resetter;
  int64_t claimed = 0, not_due = 0;
  for (int round = 0; round < 3000; ++round) {
    auto* node = new TimeoutNode;
    node->StartQueued(/*periodic=*/kind != Kind::kOneShot, /*library=*/false);
    node->deadline.store(kDue, std::memory_order_relaxed);
    ASSERT_TRUE(node->Arm());
    resetter.Start(node);
    const bool executor = kind == Kind::kPeriodicExecutor;
    for (;;) {
      const TimeoutNode::Claim c = node->ClaimToRun(kLimit, executor);
      if (c.outcome == TimeoutNode::ClaimOutcome::kNotDue) {
        EXPECT_GT(c.deadline, kLimit);
        ++not_due;
        continue;  // the resetter moves it back in time
      }
      ASSERT_EQ(c.outcome, TimeoutNode::ClaimOutcome::kClaimed);
      // Nobody can write the deadline now: it is the claim's.
      ASSERT_EQ(node->deadline.load(std::memory_order_relaxed), c.deadline)
          << "round " << round << ": the claim went by a replaced deadline";
      ASSERT_LE(c.deadline, kLimit);
      ++claimed;
      break;
    }
    // Let go as the worker does, so that the resetter can go on.
    if (kind == Kind::kPeriodicInline) {
      node->ReleaseForRun();
    } else if (kind == Kind::kPeriodicExecutor) {
      node->ScheduleNextRun(kLater);
      node->EndExecutorRun();
    }
    resetter.End();
    if (kind == Kind::kPeriodicInline) {
      uint32_t word;
      EXPECT_TRUE(node->EndInlineRun(kLater, &word));
    }
    node->Unref();  // the handle's
    node->Unref();  // the worker's
  }
  EXPECT_EQ(claimed, 3000);
  // Not a requirement, but what makes the test worth running: the resetter
  // did land between claims.
  ::testing::Test::RecordProperty("resets",
                                  static_cast<int>(resetter.resets()));
  ::testing::Test::RecordProperty("not_due", static_cast<int>(not_due));
}

TEST(TimeoutClaimTest, OneShotClaimNeverGoesByAReplacedDeadline) {
  ClaimRounds(Kind::kOneShot);
}

TEST(TimeoutClaimTest, InlinePeriodicClaimNeverGoesByAReplacedDeadline) {
  ClaimRounds(Kind::kPeriodicInline);
}

TEST(TimeoutClaimTest, ExecutorPeriodicClaimNeverGoesByAReplacedDeadline) {
  ClaimRounds(Kind::kPeriodicExecutor);
}

// No race: a node whose deadline is past the limit is not claimed, and
// keeps its state; one within it is.
TEST(TimeoutClaimTest, ClaimComparesTheDeadlineWithTheLimit) {
  auto* node = new TimeoutNode;
  node->StartQueued(/*periodic=*/false, /*library=*/false);
  node->deadline.store(kLater, std::memory_order_relaxed);
  ASSERT_TRUE(node->Arm());
  TimeoutNode::Claim c = node->ClaimToRun(kLimit, false);
  EXPECT_EQ(c.outcome, TimeoutNode::ClaimOutcome::kNotDue);
  EXPECT_EQ(c.deadline, kLater);
  EXPECT_EQ(node->state(), TimeoutState::kArmed);
  c = node->ClaimToRun(kLater, false);
  EXPECT_EQ(c.outcome, TimeoutNode::ClaimOutcome::kClaimed);
  EXPECT_EQ(node->state(), TimeoutState::kExpired);
  node->Unref();
  node->Unref();
}

}  // namespace
}  // namespace tickwheel::internal
