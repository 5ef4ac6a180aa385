// owner_schedule_cancel and owner_mass_expiry (owner_thread.h): each a
// template over the models of owner_models.h, made on the calling thread.

#include "tools/bench/workloads/owner_thread.h"

#include <algorithm>
#include <span>

#include "tools/bench/owner_models.h"
#include "tools/bench/workloads/mass_expiry.h"

namespace tickwheel::bench {
namespace {

constexpr size_t kPairsPerTurn = 1000;

// Schedules and cancels a CountingTask per delay, a loop turn after every
// kPairsPerTurn and one at the end; returns how many cancels took.
template <typename M>
int64_t RunPairs(M& m, std::span<const int64_t> delays,
                 std::atomic<int64_t>& runs) {
  int64_t took = 0;
  for (size_t i = 0; i < delays.size(); ++i) {
    took += m.Pair(delays[i], CountingTask{&runs, delays[i]}) ? 1 : 0;
    if ((i + 1) % kPairsPerTurn == 0) m.Turn();
  }
  m.Turn();
  return took;
}

// A warm-up on a throwaway model of --warmup pairs, then the timed N.
template <typename M, typename... Args>
RepOutput SchedulePairs(const BenchConfig& c, uint64_t seed, Args... args) {
  RepOutput out;
  const auto delays = FarDelays(c, c.n, 1, seed)[0];
  std::atomic<int64_t> runs{0};
  {
    M warm(args...);
    RunPairs(warm,
             std::span<const int64_t>(delays).first(
                 static_cast<size_t>(std::min<int64_t>(c.warmup, c.n))),
             runs);
  }
  M m(args...);
  const int64_t t0 = NowNanos(), cpu0 = ThreadCpuNanos();
  const int64_t took = RunPairs(m, delays, runs);
  const int64_t wall = NowNanos() - t0, cpu = ThreadCpuNanos() - cpu0;
  out.values["ns_per_pair"] = static_cast<double>(wall) / c.n;
  out.values["cpu_per_pair"] = static_cast<double>(cpu) / c.n;
  if (took != c.n || m.Pending() != 0 || runs.load() != 0) {
    out.failures.push_back(
        fmt::format("{} of {} cancels took, {} pending, {} ran", took, c.n,
                    m.Pending(), runs.load()));
  }
  return out;
}

// `n` MassExpiry tasks due at `deadline` (steady_clock), then the loop
// driven until all ran.
template <typename M>
void ExpireAll(M& m, MassExpiry::Record& r, int64_t n, int64_t deadline) {
  r.n = n;
  for (int64_t i = 0; i < n; ++i) m.At(MassExpiry::Task{&r, i}, deadline);
  m.Drive(r.done, n);
}

// A warm-up on a throwaway model (--warmup timeouts due 1 ms ahead), then
// the timed N.
template <typename M, typename... Args>
RepOutput MassAtOnce(const BenchConfig& c, Args... args) {
  RepOutput out;
  {
    M warm(args...);
    MassExpiry::Record r;
    ExpireAll(warm, r, std::min(c.warmup, c.n), NowNanos() + 1'000'000);
  }
  M m(args...);
  MassExpiry::Record r;
  const int64_t deadline = NowNanos() + Ms(c.mass_expiry_lead_ms).count();
  ExpireAll(m, r, c.n, deadline);
  if (r.done.load(std::memory_order_acquire) < c.n) {
    out.failures.push_back(fmt::format("{} of {} ran", r.done.load(), c.n));
    return out;
  }
  if (r.first_ns < deadline) {
    out.failures.push_back(
        fmt::format("the first ran {} ns early", deadline - r.first_ns));
  }
  out.values["last_run_ms"] = static_cast<double>(r.last_ns - deadline) / 1e6;
  out.values["expiries_mps"] =
      c.n / std::max(1.0, static_cast<double>(r.last_ns - r.first_ns)) * 1e3;
  return out;
}

std::optional<std::chrono::nanoseconds> NoTick() { return std::nullopt; }

}  // namespace

std::vector<Variant> OwnerVariants(const BenchConfig&) {
  return {{"owner", "owner thread", 0},
          {"producer", "Timer, one producer", 1, {"tickwheel"}}};
}

RepOutput OwnerScheduleCancel::RunTickwheel(const BenchConfig& c,
                                            int64_t producer, uint64_t seed) {
  return producer ? SchedulePairs<TimerProducer>(c, seed, NoTick())
                  : SchedulePairs<LocalOwner>(c, seed, NoTick());
}
std::vector<Variant> OwnerScheduleCancel::Variants(const BenchConfig& c) {
  std::vector<Variant> v = OwnerVariants(c);
  v.push_back({"owner_clock", "libuv, clock read per start", 2, {"libuv"}});
  return v;
}

RepOutput OwnerScheduleCancel::RunUv(const BenchConfig& c, int64_t read_clock,
                                     uint64_t seed) {
  return SchedulePairs<UvOwner>(c, seed, read_clock == 2);
}
RepOutput OwnerScheduleCancel::RunEvent(const BenchConfig& c, int64_t,
                                        uint64_t seed) {
  return SchedulePairs<EventOwner>(c, seed);
}

RepOutput OwnerMassExpiry::RunTickwheel(const BenchConfig& c, int64_t producer,
                                        uint64_t) {
  const std::optional<std::chrono::nanoseconds> tick = Ms(c.tick_ms);
  return producer ? MassAtOnce<TimerProducer>(c, tick)
                  : MassAtOnce<LocalOwner>(c, tick);
}
RepOutput OwnerMassExpiry::RunUv(const BenchConfig& c, int64_t, uint64_t) {
  return MassAtOnce<UvOwner>(c, false);
}
RepOutput OwnerMassExpiry::RunEvent(const BenchConfig& c, int64_t, uint64_t) {
  return MassAtOnce<EventOwner>(c);
}

}  // namespace tickwheel::bench
