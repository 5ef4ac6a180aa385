// worker/chunk_policy.h
// -----------------------------------------------------------------------------
// Internal. When a cell depot (worker/cell_depot.h) faults chunks in ahead of
// need, and when it gives spare ones back to the kernel: the numbers, and
// each decision as a small function of the depot's counts and a clock
// reading (MonotonicNanos(): one pool serves every timer, whatever their
// clocks). Nothing here reads a clock, takes a lock or calls the kernel: the
// depot keeps the state under its mutex, asks, and acts on the answer.
//
// The reserve (ReservePolicy). The first touch of a page is a page fault, so
// a chunk goes into use only from a reserve of chunks already faulted in,
// which the timer's worker fills; a producer then takes its cells without
// faults. The target for the ready cells (free cells of chunks in use, plus
// the reserve's), in chunks, follows growth: one, plus one once a second
// chunk has gone into use in the current run of growth and one more per
// kGrowthPerReserveChunk after that, at most kMaxReserveChunks; a run ends
// after kGrowthWindowNanos without a chunk put into use. The longer a burst
// grows, the further ahead the worker stays, so that a worker that runs late
// now and then still keeps up; a small or steady load keeps one chunk ready.
// Beyond one chunk, the target is at most one chunk per kInUsePerReserveChunk
// chunks in use: what a burst leaves faulted in once it is over is bounded
// by a share of the memory it left in use (a sixteenth), not by how fast it
// came (a million timeouts scheduled at once leave one chunk ready, not
// seven; the spare chunks then decay as below).
//
// The decay (DecayPolicy). A spare chunk (wholly free, in use or in the
// reserve) stays resident, ready for the next burst, until it has gone
// unused for kDecayNanos; then the next decay gives its pages back, down to
// kKeptFreeChunks spare chunks, which stay resident however long they go
// unused. A chunk with one cell in use is never given back (cells do not
// move).
//
// Thread-compatible: ReservePolicy's state is guarded by the depot's mutex.

#ifndef TICKWHEEL_WORKER_CHUNK_POLICY_H_
#define TICKWHEEL_WORKER_CHUNK_POLICY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tickwheel::internal {

// A spare chunk, as the decay sees it: where, and unused since when.
struct SpareChunk {
  char* base;
  int64_t spare_since;
};

// When spare chunks go back to the kernel. Times are MonotonicNanos()
// readings.
class DecayPolicy {
 public:
  // Spare chunks (reserve included) that stay resident however long they go
  // unused.
  static constexpr size_t kKeptFreeChunks = 2;
  // How long a spare chunk beyond the floor stays resident unused.
  static constexpr int64_t kDecayNanos = 2'000'000'000;
  // A decay that is due also gives back the chunks due within this much
  // more, so that chunks that went spare a little apart (a burst's reserve)
  // cost one wake-up of the worker, not one each.
  static constexpr int64_t kDecaySlackNanos = kDecayNanos / 4;
  // The plan of a depot with at most kKeptFreeChunks spare: no decay.
  static constexpr int64_t kNothingDue = INT64_MAX;
  // A cutoff by which every spare chunk is due, whatever its age: for a
  // depot that nobody is left to decay later (worker/decay_wakers.h).
  static constexpr int64_t kEverythingDue = INT64_MAX - kDecayNanos;

  // When a chunk spare since `spare_since` is due to go.
  static constexpr int64_t DueAt(int64_t spare_since) {
    return spare_since + kDecayNanos;
  }

  // A chunk has just become spare, leaving `spare_chunks` spare, and
  // `planned` is the decay planned so far. True when this makes the first
  // decay due: the plan becomes DueAt(now), and a waker must hear of it. A
  // decay planned already is due no later, and whoever planned it told a
  // waker; the decay then plans the rest.
  static constexpr bool StartsADecay(size_t spare_chunks, int64_t planned) {
    return spare_chunks > kKeptFreeChunks && planned == kNothingDue;
  }

  // Whether a decay at `now` has anything to do under the plan.
  static constexpr bool IsDue(int64_t planned, int64_t now) {
    return now >= planned;
  }

  // The cutoff of a decay at `now`: chunks due by then go.
  static constexpr int64_t DueBy(int64_t now) { return now + kDecaySlackNanos; }

  struct Decision {
    std::vector<char*> release;  // highest address first
    int64_t next;                // the plan afterwards
  };
  // A decay with cutoff `due_by` over `spare`, every spare chunk of a depot.
  // Gives back the chunks due by `due_by`, highest address first (so that
  // those kept are the ones new cells are taken from first), for as long as
  // more than kKeptFreeChunks are spare. The next plan: when the earliest of
  // the chunks left is due if more than kKeptFreeChunks are left, else
  // kNothingDue.
  static Decision Decide(std::vector<SpareChunk> spare, int64_t due_by);
};

// How far ahead of need the reserve keeps ready cells. A value type: the
// state of the current run of growth, with pure functions of it.
class ReservePolicy {
 public:
  static constexpr size_t kGrowthPerReserveChunk = 4;
  static constexpr size_t kMaxReserveChunks = 16;
  static constexpr size_t kInUsePerReserveChunk = 16;
  // A run of growth ends after this long without a chunk put into use.
  static constexpr int64_t kGrowthWindowNanos = DecayPolicy::kDecayNanos;
  // Chunks one Replenish() call faults in at most, so that a pass of the
  // worker is not held up for long.
  static constexpr size_t kChunksPerReplenish = 2;

  // The target after `grown` chunks put into use in one run of growth.
  static constexpr size_t TargetForGrowth(size_t grown) {
    return std::min(
        1 + (grown + kGrowthPerReserveChunk - 2) / kGrowthPerReserveChunk,
        kMaxReserveChunks);
  }

  // A chunk went into use at `now`: it continues the run of growth, or
  // starts a new one if the last was more than kGrowthWindowNanos ago.
  void NoteGrowth(int64_t now) {
    if (now - last_growth_ > kGrowthWindowNanos) grown_ = 0;
    ++grown_;
    last_growth_ = now;
  }

  // The most the target may be with `in_use` chunks in use.
  static constexpr size_t CapForInUse(size_t in_use) {
    return std::max<size_t>(1, in_use / kInUsePerReserveChunk);
  }

  // The target at `now` with `in_use` chunks in use, in chunks of ready
  // cells: 1 outside a run.
  size_t TargetChunks(int64_t now, size_t in_use) const {
    if (grown_ == 0 || now - last_growth_ > kGrowthWindowNanos) return 1;
    return std::min(TargetForGrowth(grown_), CapForInUse(in_use));
  }

  // Whether `ready_cells` fall short of the target at `now`.
  bool IsShort(size_t ready_cells, size_t cells_per_chunk, int64_t now,
               size_t in_use) const {
    return ready_cells < TargetChunks(now, in_use) * cells_per_chunk;
  }

  // False when `ready_cells` meet the target at any time: then IsShort()
  // needs no clock reading.
  bool MayBeShort(size_t ready_cells, size_t cells_per_chunk) const {
    return ready_cells <
           TargetForGrowth(std::max<size_t>(grown_, 1)) * cells_per_chunk;
  }

  enum class Step { kEnough, kFaultOneIn, kAskAgain };
  // What a Replenish() call does next, having faulted `faulted` chunks in:
  // nothing more once `ready_cells` (counting chunks on their way from
  // other threads) meet `target_cells`, or when the threads that may map at
  // once are all mapping; ask for another call once it has faulted
  // kChunksPerReplenish in; else fault one more in.
  static constexpr Step NextReplenishStep(size_t ready_cells,
                                          size_t target_cells,
                                          bool mappers_at_limit,
                                          size_t faulted) {
    if (ready_cells >= target_cells || mappers_at_limit) return Step::kEnough;
    if (faulted >= kChunksPerReplenish) return Step::kAskAgain;
    return Step::kFaultOneIn;
  }

 private:
  size_t grown_ = 0;         // chunks put into use in the current run
  int64_t last_growth_ = 0;  // when the last one was
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_WORKER_CHUNK_POLICY_H_
