#include "tests/model/fuzz_races.h"

#include <array>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tickwheel::model {
namespace {

std::array<std::atomic<int64_t>, 2> races_executed{};

std::string CancelWonNotPending(int64_t id) {
  return fmt::format("race: cancel(#{}) won, but the model has it not pending",
                     id);
}

std::string CancelLostStillPending(int64_t id, const char* after) {
  return fmt::format(
      "race: cancel(#{}) lost, but the model has it pending after {}", id,
      after);
}

// The racer's cancel() of `id` while the test thread runs `mine`; how many
// cancel() calls returned true.
int RacerCancels(FuzzContext& c, int64_t id,
                 const std::function<void()>& mine) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  Racer::Get().Race(mine, [&] {
    if (shared.cancel()) wins.fetch_add(1);
  });
  return wins.load();
}

// Checks a cancel() that won (`won`) against the model, and applies `other`,
// the racing call, to the model in the order the result shows.
template <typename Other>
std::string Ordered(FuzzContext& c, int64_t id, bool won, const char* after,
                    Other other) {
  if (won) {
    if (!c.model.Cancel(id)) return CancelWonNotPending(id);
    other();
  } else {
    other();
    if (c.model.Cancel(id)) return CancelLostStillPending(id, after);
  }
  return "";
}

// cancel() through the handle object from both threads (kind 0), through
// two copies (1), or against copies of it (2); the model takes them as one
// cancel() (kind 2 has only one canceller).
std::string RaceCancels(int kind, FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  auto cancel_shared = [&] {
    if (shared.cancel()) wins.fetch_add(1);
  };
  if (kind == 1 || kind == 2) {
    const Timeout copy = shared;
    Racer::Get().Race(cancel_shared, [&] {
      if (kind == 1) {
        if (copy.cancel()) wins.fetch_add(1);
        return;
      }
      for (int i = 0; i < 8; ++i) {
        Timeout again = shared;
        (void)again.isCancelled();
      }
    });
  } else {
    Racer::Get().Race(cancel_shared, cancel_shared);
  }
  const bool m = c.model.Cancel(id);
  c.trace +=
      fmt::format("  race({}): cancel(#{}) -> {} won\n", kind, id, wins.load());
  if (wins.load() != (m ? 1 : 0)) {
    return fmt::format("race({}) cancel(#{}): {} calls returned true, model {}",
                       kind, id, wins.load(), m ? 1 : 0);
  }
  return "";
}

// One order the racer's cancel() and the advance could take, played on a
// copy of the model.
struct Order {
  const char* name;
  TimerModel model;
  bool cancelled = false;  // the racer's cancel() returned true
  int64_t ran = 0;         // runs in the advance
};

// The racer's cancel() against the advance: whoever claims the timeout
// first wins. A Timer's clock moves in the race (its worker runs what is
// due); a LocalTimer's moves first and advance() races.
std::string RaceCancelWithAdvance(Reader& in, FuzzContext& c, int64_t id) {
  int64_t nanos = c.TakeAdvance(in.Byte());
  const int64_t moved = nanos;
  if (c.local) {
    c.real.AdvanceClock(nanos);
    c.model.AdvanceClock(nanos);
    nanos = 0;
  }
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  int64_t ran = 0;
  Racer::Get().Race([&] { ran = c.real.Advance(nanos); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                      if (c.local) {
                        // The queries any thread may make, under TSan.
                        (void)c.real.Pending();
                        (void)c.real.LocalNow();
                      }
                    });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || advance({}ns) -> {}\n",
                         id, wins.load(), moved, ran);
  const std::vector<Event> observed = c.real.events();
  const absl::Duration d = absl::Nanoseconds(nanos);
  std::vector<Order> orders;
  orders.push_back({"cancel() first", c.model});
  orders.back().cancelled = orders.back().model.Cancel(id);
  orders.back().ran = orders.back().model.Advance(d, &observed);
  orders.push_back({"advance first", c.model});
  orders.back().ran = orders.back().model.Advance(d, &observed);
  orders.back().cancelled = orders.back().model.Cancel(id);
  if (!c.local) {
    // A Timer's cancel() that finds the timeout still in its lane takes it
    // back with one CAS on the cell, then settles the cell (a tombstone).
    // A worker whose pass reads the lane between the two finds the cell
    // claimed but empty and leaves it, and all the lane holds behind it,
    // for its next pass (worker/intake.h): the tasks the test thread
    // scheduled after this one then run as overdue ones, after the rest of
    // the pass. The counts are those of "cancel() first"; the ticks those
    // tasks report and their place in the run order are not.
    orders.push_back(
        {"cancel() first, taken back as the worker reads its lane", c.model});
    Order& o = orders.back();
    o.cancelled = o.model.Cancel(id);
    o.ran = o.model.AdvanceHoldingBack(d, id, &observed);
  }
  if (c.local && c.model.IsPeriodic(id)) {
    for (const bool at_start : {true, false}) {
      orders.push_back({at_start ? "cancel() as its run starts"
                                 : "cancel() right after its run",
                        c.model});
      Order& o = orders.back();
      o.ran = o.model.Advance(&observed, id, at_start);
      o.cancelled = o.model.cancelled_in_run();
    }
  }
  std::string tried;
  for (Order& o : orders) {
    if (o.cancelled == (wins.load() == 1) && o.ran == ran &&
        o.model.events() == observed && o.model.Pending() == c.real.Pending()) {
      c.model = std::move(o.model);
      if (o.cancelled && c.model.IsPeriodic(id)) c.model.OpenDeadline(id);
      return "";
    }
    tried += fmt::format(" {}: cancel {} ran {} pending {};", o.name,
                         o.cancelled, o.ran, o.model.Pending());
  }
  return fmt::format(
      "race cancel(#{}) || advance: real cancel {} ran {} pending {}, no "
      "order gives that:{}",
      id, wins.load() == 1, ran, c.real.Pending(), tried);
}

// The cancel() before stop() or after it.
std::string RaceCancelWithStop(FuzzContext& c, int64_t id) {
  Code code;
  std::vector<int64_t> stopped;
  const int wins = RacerCancels(c, id, [&] { stopped = c.real.Stop(&code); });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || stop() -> [{}]\n", id,
                         wins, fmt::join(stopped, ","));
  std::vector<int64_t> expected;
  if (std::string d = Ordered(c, id, wins == 1, "stop()",
                              [&] { expected = c.model.Stop(); });
      !d.empty()) {
    return d;
  }
  return CompareStop(c.model, code, stopped, expected);
}

// Of two takeTask() calls, one gets the task when there is one.
std::string RaceTakeTasks(FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> taken{0};
  auto take = [&] {
    if (shared.takeTask() != nullptr) taken.fetch_add(1);
  };
  Racer::Get().Race(take, take);
  const bool m = c.model.TakeTask(id);
  c.trace +=
      fmt::format("  race: takeTask(#{}) x2 -> {} taken\n", id, taken.load());
  if (taken.load() != (m ? 1 : 0)) {
    return fmt::format("race takeTask(#{}) x2: {} got the task, model {}", id,
                       taken.load(), m ? 1 : 0);
  }
  return "";
}

// The cancel() before the destructor or after it.
std::string RaceCancelWithDestroy(FuzzContext& c, int64_t id) {
  const int wins = RacerCancels(c, id, [&] { c.real.Destroy(); });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || destroy\n", id, wins);
  return Ordered(c, id, wins == 1, "the destructor",
                 [&] { c.model.Destroy(); });
}

}  // namespace

Racer& Racer::Get() {
  static Racer* const racer = new Racer;
  return *racer;
}

Racer::Racer() : thread_([this] { Loop(); }) { thread_.detach(); }

void Racer::Race(const std::function<void()>& mine,
                 const std::function<void()>& theirs) {
  arrived_.store(0);
  done_.store(false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &theirs;
  }
  cv_.notify_one();
  Arrive();
  mine();
  while (!done_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void Racer::Arrive() {
  arrived_.fetch_add(1);
  while (arrived_.load() < 2) std::this_thread::yield();
}

void Racer::Loop() {
  for (;;) {
    const std::function<void()>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return job_ != nullptr; });
      job = std::exchange(job_, nullptr);
    }
    Arrive();
    (*job)();
    done_.store(true, std::memory_order_release);
  }
}

void CountRace(const FuzzContext& c) {
  races_executed[c.local ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
}

int64_t FuzzRacesExecuted(TimerKind kind) {
  return races_executed[kind == TimerKind::kLocal ? 1 : 0].load();
}

std::string RaceCancelWithCancelAll(FuzzContext& c, int64_t id) {
  const bool was_pending = c.model.state(id) == TimerModel::State::kPending;
  const int64_t pending = c.model.Pending();
  std::atomic<int64_t> count{-1};
  const int wins = RacerCancels(c, id, [&] { count = c.real.CancelAll(); });
  c.trace += fmt::format("  race: cancelAll() -> {} || cancel(#{}) -> {}\n",
                         count.load(), id, wins);
  if (wins == 1 && !was_pending) return CancelWonNotPending(id);
  if (count.load() + wins != pending) {
    return fmt::format(
        "race cancelAll() || cancel(#{}): {} + {} cancelled, {} were pending",
        id, count.load(), wins, pending);
  }
  int64_t expected = 0;
  if (std::string d = Ordered(c, id, wins == 1, "cancelAll()",
                              [&] { expected = c.model.CancelAll(); });
      !d.empty()) {
    return d;
  }
  if (expected != count.load()) {
    return fmt::format("race cancelAll(): real {} model {}", count.load(),
                       expected);
  }
  return "";
}

std::string RunTimerRace(int kind, Reader& in, FuzzContext& c) {
  if (c.model.next_id() == 0) return "";
  CountRace(c);
  const int64_t id = in.Byte() % c.model.next_id();
  if ((c.model.destroyed() && (kind == 3 || kind == 4 || kind == 6)) ||
      (kind == 3 && (!c.unlimited || c.model.IsPeriodic(id)))) {
    kind = 0;
  }
  switch (kind) {
    case 3:
      return RaceCancelWithAdvance(in, c, id);
    case 4:
      return RaceCancelWithStop(c, id);
    case 5:
      return RaceTakeTasks(c, id);
    case 6:
      return RaceCancelWithDestroy(c, id);
    default:
      return RaceCancels(kind == 7 ? 0 : kind, c, id);
  }
}

std::string RunLocalRace(Reader& in, FuzzContext& c) {
  int kind = in.Byte() % 8;
  if (c.model.next_id() == 0) return "";
  CountRace(c);
  const int64_t id = in.Byte() % c.model.next_id();
  if (c.model.destroyed() || (kind >= 2 && kind <= 4 && !c.unlimited)) {
    kind = 0;
  }
  switch (kind) {
    case 2:
    case 3:
    case 4:
      return RaceCancelWithAdvance(in, c, id);
    case 5:
      return RaceCancelWithStop(c, id);
    case 6:
      return RaceCancelWithCancelAll(c, id);
    case 7:
      return RaceCancelWithDestroy(c, id);
    default:
      return RaceCancels(0, c, id);
  }
}

}  // namespace tickwheel::model
