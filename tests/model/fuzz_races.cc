#include "tests/model/fuzz_races.h"

#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_compare.h"

namespace tickwheel::model {
namespace {

// Kinds 0, 1, 2 and 7: cancel() through the handle object from both threads
// (0, 7), through two copies (1), or against copies of it (2); the model
// takes them as one cancel() (kind 2 has only one canceller).
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

// Kind 3: either order, the cancel() before the advance or after it.
std::string RaceCancelWithAdvance(Reader& in, FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  const int64_t nanos = c.TakeAdvance(in.Byte());
  Racer::Get().Race([&] { c.real.Advance(nanos); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                    });
  c.trace += fmt::format("  race: cancel(#{}) -> {} || advance({}ns)\n", id,
                         wins.load(), nanos);
  const std::vector<Event> observed = c.real.events();
  auto advance = [&] { c.model.Advance(absl::Nanoseconds(nanos), &observed); };
  if (wins.load() == 1) {
    if (!c.model.Cancel(id)) return RaceCancelWonNotPending(id);
    advance();
  } else {
    advance();
    if (c.model.Cancel(id))
      return RaceCancelLostStillPending(id, "the advance");
  }
  return "";
}

// Kind 4: either order, the cancel() before stop() or after it.
std::string RaceCancelWithStop(FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  Code code;
  std::vector<int64_t> stopped;
  Racer::Get().Race([&] { stopped = c.real.Stop(&code); },
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
  return CompareStop(c.model, code, stopped, expected);
}

// Kind 5: of two takeTask() calls, one gets the task when there is one.
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

// Kind 6: either order, the cancel() before ~Timer or after it.
std::string RaceCancelWithDestroy(FuzzContext& c, int64_t id) {
  const Timeout& shared = c.real.SharedHandle(id);
  std::atomic<int> wins{0};
  Racer::Get().Race([&] { c.real.Destroy(); },
                    [&] {
                      if (shared.cancel()) wins.fetch_add(1);
                    });
  c.trace +=
      fmt::format("  race: cancel(#{}) -> {} || ~Timer()\n", id, wins.load());
  if (wins.load() == 1) {
    if (!c.model.Cancel(id)) return RaceCancelWonNotPending(id);
    c.model.Destroy();
  } else {
    c.model.Destroy();
    if (c.model.Cancel(id)) return RaceCancelLostStillPending(id, "~Timer");
  }
  return "";
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

std::string RaceCancelWonNotPending(int64_t id) {
  return fmt::format("race: cancel(#{}) won, but the model has it not pending",
                     id);
}

std::string RaceCancelLostStillPending(int64_t id, const char* after) {
  return fmt::format(
      "race: cancel(#{}) lost, but the model has it pending after {}", id,
      after);
}

std::string RunRace(int kind, Reader& in, FuzzContext& c) {
  if (c.model.next_id() == 0) return "";
  CountRace();
  const int64_t id = in.Byte() % c.model.next_id();
  const bool timer_gone = c.model.destroyed();
  if ((timer_gone && (kind == 3 || kind == 4 || kind == 6)) ||
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
      return RaceCancels(kind, c, id);
  }
}

}  // namespace tickwheel::model
