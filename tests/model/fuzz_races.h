// tests/model/fuzz_races.h
// -----------------------------------------------------------------------------
// The fuzzers' race operations: the test thread and a second thread (the
// Racer) act at the same moment on the same handle object or on the timer,
// and the outcome must be one the model accepts for the orders the two calls
// could take. RunTimerRace() and RunLocalRace() (fuzz_races.cc) race cancel()
// and takeTask() against the other calls; RunResetRace() (a Timer's opcode
// 0xFD, fuzz_reset_races.cc) races reset() and cancelAll(), and reset()
// against the expiry within a tick.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_RACES_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_RACES_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_ops.h"

namespace tickwheel::model {

// A second thread for the race operations. Race() runs one part on the
// calling thread and the other on the racer's, released together (both spin
// until both have arrived) so that the two overlap as closely as threads can.
// This class is thread-compatible: one thread calls Race() at a time.
class Racer {
 public:
  // One for the process, never destroyed: the fuzzer runs input after input.
  static Racer& Get();

  void Race(const std::function<void()>& mine,
            const std::function<void()>& theirs);

 private:
  Racer();
  void Arrive();
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* job_ = nullptr;  // guarded by mu_
  std::atomic<int> arrived_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The Timer fuzzer's races (opcodes 0xF0-0xF7; `kind` the low three bits,
// the next byte picks the timeout):
//   0, 7  cancel() from both threads through the one handle object
//   1     cancel() from both threads, through two copies
//   2     cancel() while the racer copies and drops the handle
//   3     the racer's cancel() while the clock advances (tasks run)
//                                                  [advance]
//   4     the racer's cancel() while the test thread calls stop()
//   5     takeTask() from both threads through the one handle object
//   6     the racer's cancel() while the test thread destroys the Timer
// A kind that needs the timer acts as kind 0 once it is destroyed; kind 3
// does too with max_pending set, where a task's child may be rejected or not
// depending on where the cancel lands inside the advance, and on a periodic
// timeout, which a cancel() may end after some of the advance's runs. With
// no timeout yet, it reads no byte and does nothing.
std::string RunTimerRace(int kind, Reader& in, FuzzContext& c);

// The LocalTimer fuzzer's races (opcode 14): the test thread (the owner) and
// the racer act at the same moment. Kinds (the byte after the opcode, modulo
// 8; then [timeout]):
//   0, 1     cancel() from both threads through the one handle object
//   2, 3, 4  the racer's cancel() while the owner calls advance() (after
//            moving the clock by [advance]; the racer also reads
//            pendingTimeouts() and now(), which any thread may)
//   5        the racer's cancel() while the owner calls stop()
//   6        the racer's cancel() while the owner calls cancelAll()
//   7        the racer's cancel() while the owner destroys the LocalTimer
// Kinds 2-7 act as kind 0 once the LocalTimer is destroyed; kinds 2-4 do
// too with max_pending set.
std::string RunLocalRace(Reader& in, FuzzContext& c);

// How the races are checked, for both timers: a race of cancel() with
// cancel(), takeTask() with takeTask(): one wins iff the timeout was pending
// (had a task). cancel() with advance(): the model plays the cancel() before
// the advance, after it, and (a LocalTimer's periodic timeout) as its run in
// it starts and right after that run, each on a copy; the real outcome (the
// cancel()'s result, the count of runs, every event, the pending count) must
// be one of them: exactly once. A Timer's cancel() may also take the timeout
// back out of its lane while the worker's pass reads that lane; the worker
// then leaves the rest of the lane to its next pass, so the model plays that
// order too (TimerModel::AdvanceHoldingBack()): the counts of the cancel()
// first, with what the test thread scheduled after the timeout run late, in
// their own ended ticks. cancel() with stop() or the destructor: each
// timeout cancelled or returned, once. cancel() with cancelAll(): the timeout
// cancelled by exactly one of them, the count the rest.

// A race on the calls added later (opcode 0xFD; the next byte picks the
// kind, bits 0-3, the one after it the timeout):
//   0  reset() against cancel() on the one handle object: the cancel() wins
//      iff the timeout was pending (nothing runs meanwhile: the clock stands
//      still); a reset() that returned true came first, and the deadline()
//      is its deadline.                                  [delay]
//   1  reset() against reset() with two delays: both return true iff the
//      timeout was pending, and the deadline is one of the two.
//                                                        [delay] [delay]
//   2  cancelAll() against cancel(): the timeout is cancelled by exactly one
//      of them, and cancelAll() counts every other pending timeout.
//   3  the racer's cancelAll() against the test thread's stop(): each
//      pending timeout ends up cancelled by the one or returned by the other
//      (cancelAll()'s count plus stop()'s list is the pending count), and
//      stop()'s list is in deadline order.
//   4  (bit 2 set) the racer's reset() against the test thread's clock
//      advance, with a delay that ends after the advance: false iff the
//      timeout was not pending after the advance (it ran in it, or had
//      ended before); true with the deadline from the clock before or after
//      the advance moved it, and then it does not run in the advance.
//      Compared exactly after that.                      [advance] [delay]
//   5  (bit 3 set) reset() racing the expiry within a tick, on a timer of
//      its own with slack 0: RunWithinTickResetRace() in
//      fuzz_reset_races.cc (its bytes follow the kind byte; no timeout
//      byte).
// Kinds 2, 3 and 4 act as kind 0 once the timer is destroyed, and kind 4
// also with max_pending set (a child's rejection may depend on where the
// reset() lands) and on a periodic timeout (which may run in the advance
// and still be pending). The delays of kinds 0 and 1 are at least a tick,
// so that no reset() makes the timeout overdue, which could let the worker
// run it in the middle of the race. Kinds 0-4 with no timeout yet read no
// timeout byte and do nothing.
std::string RunResetRace(Reader& in, FuzzContext& c);

// The racer's cancel() of `id` while the test thread calls cancelAll(), as
// above (Timer: RunResetRace() kind 2; LocalTimer: kind 6).
std::string RaceCancelWithCancelAll(FuzzContext& c, int64_t id);

// Counts one race (FuzzRacesExecuted()).
void CountRace(const FuzzContext& c);

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_RACES_H_
