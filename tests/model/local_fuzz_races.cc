// The LocalTimer fuzzer's races (RunLocalRace(), local_fuzz_ops.h): the
// racer (fuzz_races.h) calls cancel() on a handle object while the owner
// thread calls advance(), stop(), cancelAll(), ~LocalTimer or cancel().

#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_races.h"
#include "tests/model/local_fuzz_ops.h"

namespace tickwheel::model {
namespace {

std::atomic<int64_t> local_races{0};

// Kinds 0 and 1: one handle object, cancel() from both threads.
std::string RaceCancels(LocalFuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  auto cancel = [&] {
    if (shared.cancel()) wins.fetch_add(1);
  };
  Racer::Get().Race(cancel, cancel);
  const bool m = c.model.Cancel(id);
  c.trace += fmt::format("  race: cancel(#{}) x2 -> {} won\n", id, wins.load());
  if (wins.load() != (m ? 1 : 0)) {
    return fmt::format("race cancel(#{}) x2: {} calls returned true, model {}",
                       id, wins.load(), m ? 1 : 0);
  }
  return "";
}

// One order the racer's cancel() and the owner's advance() could take,
// played on a copy of the model.
struct Order {
  const char* name;
  LocalTimerModel model;
  bool cancelled = false;  // the racer's cancel() returned true
  int64_t ran = 0;         // advance()'s result
};

// Kinds 2-4: the racer's cancel() against advance(). Whoever claims the
// timeout first wins; the model plays the cancel() before the advance(),
// after it, and (for a periodic timeout) as its run in it starts and right
// after that run, and the real outcome must be one of them in every
// observable.
std::string RaceCancelWithAdvance(Reader& in, LocalFuzzContext& c, int64_t id) {
  const int64_t nanos = c.TakeAdvance(in.Byte());
  c.real.AdvanceClock(nanos);
  c.model.AdvanceClock(nanos);
  const Timeout& shared = c.real.SharedHandle(id);
  LocalTimer* timer = c.real.timer();
  std::atomic<int> wins{0};
  int64_t ran = 0;
  Racer::Get().Race([&] { ran = c.real.Advance(); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                      // The queries any thread may make, under TSan.
                      (void)timer->pendingTimeouts();
                      (void)timer->now();
                    });
  c.trace += fmt::format(
      "  race: cancel(#{}) -> {} || clock +{}ns, advance() "
      "-> {}\n",
      id, wins.load(), nanos, ran);
  const std::vector<Event>& observed = c.real.events();
  std::vector<Order> orders;
  orders.push_back({"cancel() first", c.model});
  orders.back().cancelled = orders.back().model.Cancel(id);
  orders.back().ran = orders.back().model.Advance(&observed);
  orders.push_back({"advance() first", c.model});
  orders.back().ran = orders.back().model.Advance(&observed);
  orders.back().cancelled = orders.back().model.Cancel(id);
  if (c.model.IsPeriodic(id)) {
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
      "race cancel(#{}) || advance(): real cancel {} ran {} pending {}, no "
      "order gives that:{}",
      id, wins.load() == 1, ran, c.real.Pending(), tried);
}

// Kind 5: the cancel() before stop() or after it.
std::string RaceCancelWithStop(LocalFuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  std::vector<int64_t> stopped;
  Racer::Get().Race([&] { stopped = c.real.Stop(); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                    });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || stop() -> [{}]\n", id,
                         wins.load(), fmt::join(stopped, ","));
  std::vector<int64_t> expected;
  if (wins.load() == 1) {
    if (!c.model.Cancel(id)) return RaceCancelWonNotPending(id);
    expected = c.model.Stop();
  } else {
    expected = c.model.Stop();
    if (c.model.Cancel(id)) return RaceCancelLostStillPending(id, "stop()");
  }
  return CompareLocalStop(c.model, stopped, expected);
}

// Kind 6: the cancel() before cancelAll() or after it.
std::string RaceCancelWithCancelAll(LocalFuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  int64_t count = 0;
  Racer::Get().Race([&] { count = c.real.CancelAll(); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                    });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || cancelAll() -> {}\n", id,
                         wins.load(), count);
  int64_t expected;
  if (wins.load() == 1) {
    if (!c.model.Cancel(id)) return RaceCancelWonNotPending(id);
    expected = c.model.CancelAll();
  } else {
    expected = c.model.CancelAll();
    if (c.model.Cancel(id)) {
      return RaceCancelLostStillPending(id, "cancelAll()");
    }
  }
  if (count != expected) {
    return fmt::format("race cancelAll(): real {} model {}", count, expected);
  }
  return "";
}

// Kind 7: the cancel() before ~LocalTimer or after it.
std::string RaceCancelWithDestroy(LocalFuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  Racer::Get().Race([&] { c.real.Destroy(); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                    });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || ~LocalTimer()\n", id,
                         wins.load());
  if (wins.load() == 1) {
    if (!c.model.Cancel(id)) return RaceCancelWonNotPending(id);
    c.model.Destroy();
  } else {
    c.model.Destroy();
    if (c.model.Cancel(id)) {
      return RaceCancelLostStillPending(id, "~LocalTimer");
    }
  }
  return "";
}

}  // namespace

void CountLocalRace() { local_races.fetch_add(1, std::memory_order_relaxed); }

int64_t LocalFuzzRacesExecuted() { return local_races.load(); }

std::string RunLocalRace(Reader& in, LocalFuzzContext& c) {
  int kind = in.Byte() % 8;
  if (c.model.next_id() == 0) return "";
  CountLocalRace();
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
      return RaceCancels(c, id);
  }
}

}  // namespace tickwheel::model
