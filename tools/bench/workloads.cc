#include "tools/bench/workloads.h"

#include <algorithm>
#include <iterator>

#include "tools/bench/asio_bench.h"
#include "tools/bench/event_bench.h"
#include "tools/bench/heap_bench.h"
#include "tools/bench/netty_bench.h"
#include "tools/bench/tickwheel_bench.h"
#include "tools/bench/uv_bench.h"
#include "tools/bench/workloads/coro_deadline.h"
#include "tools/bench/workloads/idle.h"
#include "tools/bench/workloads/lateness.h"
#include "tools/bench/workloads/mass_expiry.h"
#include "tools/bench/workloads/memory.h"
#include "tools/bench/workloads/owner_thread.h"
#include "tools/bench/workloads/schedule.h"

namespace tickwheel::bench {
namespace {

template <typename W, BenchTimer T>
RepOutput WarmThenRun(const BenchConfig& config, int64_t variant,
                      uint64_t seed) {
  WarmUp<T>(config);
  return W::template Run<T>(config, variant, seed);
}

// Netty runs the workload's Java twin in a JVM, which warms up as WarmUp()
// does and then some (NettyBench.java), on the delays Run<T> would get.
template <typename W>
RepOutput RunOnNetty(const BenchConfig& config, int64_t variant,
                     uint64_t seed) {
  std::vector<std::vector<int64_t>> delays;
  if constexpr (requires { &W::Delays; })
    delays = W::Delays(config, variant, seed);
  return RunNetty(config, W::kName, variant, delays);
}

std::vector<Variant> OneRun(const BenchConfig&) { return {{"", "", 0}}; }

template <typename W>
Workload Entry() {
  Workload w{W::kName,
             W::kWhat,
             {std::begin(W::kMetrics), std::end(W::kMetrics)},
             "",
             &OneRun,
             {{"tickwheel", &WarmThenRun<W, TickwheelBench>},
              {"asio", &WarmThenRun<W, AsioBench>},
              {"heap", &WarmThenRun<W, HeapBench>},
              {"libuv", &WarmThenRun<W, UvBench>},
              {"libevent", &WarmThenRun<W, EventBench>},
              {"netty", &RunOnNetty<W>}}};
  if constexpr (requires { W::kRatioMetric; }) w.ratio_metric = W::kRatioMetric;
  if constexpr (requires { &W::Variants; }) w.variants = &W::Variants;
  return w;
}

// A workload of Asio operations, not of the BenchTimer concept: tickwheel
// (AsyncSleep) and asio (steady_timer) only.
template <typename W>
Workload CoroDeadlineEntry() {
  return {W::kName,
          W::kWhat,
          {std::begin(W::kMetrics), std::end(W::kMetrics)},
          "",
          &OneRun,
          {{"tickwheel", &W::RunTickwheel}, {"asio", &W::RunAsio}}};
}

// The owner-thread workloads: tickwheel (LocalTimer, or Timer in the
// producer variant), libuv and libevent.
template <typename W>
Workload OwnerEntry() {
  Workload w{W::kName,
             W::kWhat,
             {std::begin(W::kMetrics), std::end(W::kMetrics)},
             "",
             [] {
               if constexpr (requires { &W::Variants; }) {
                 return &W::Variants;
               } else {
                 return &OwnerVariants;
               }
             }(),
             {{"tickwheel", &W::RunTickwheel},
              {"libuv", &W::RunUv},
              {"libevent", &W::RunEvent}}};
  if constexpr (requires { W::kRatioMetric; }) w.ratio_metric = W::kRatioMetric;
  return w;
}

}  // namespace

bool Variant::Runs(const std::string& impl) const {
  return impls.empty() ||
         std::find(impls.begin(), impls.end(), impl) != impls.end();
}

std::vector<Variant> ProducerVariants(const BenchConfig& c) {
  std::vector<Variant> v;
  for (int64_t p : c.producers) {
    v.push_back({fmt::format("p{}", p),
                 fmt::format("{} producer{}", p, p == 1 ? "" : "s"), p});
  }
  return v;
}

Variant PendingVariant(int64_t n) {
  const std::string count = n % 1000000 == 0 ? fmt::format("{}M", n / 1000000)
                            : n % 1000 == 0  ? fmt::format("{}k", n / 1000)
                                             : fmt::format("{}", n);
  return {fmt::format("pending{}", n), count + " pending", n};
}

const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> workloads = {
      Entry<Schedule>(),
      Entry<ScheduleCancel>(),
      Entry<ScheduleDepth>(),
      Entry<Memory>(),
      Entry<Release>(),
      Entry<Lateness>(),
      Entry<Idle>(),
      Entry<MassExpiry>(),
      Entry<Burst>(),
      CoroDeadlineEntry<CoroDeadline>(),
      CoroDeadlineEntry<CoroDeadlineLocal>(),
      OwnerEntry<OwnerScheduleCancel>(),
      OwnerEntry<OwnerMassExpiry>()};
  return workloads;
}

const Workload* FindWorkload(const std::string& name) {
  for (const Workload& w : Workloads()) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

std::string KeyPrefix(const Workload& w, const Variant& v) {
  return v.key.empty() ? w.name + "." : fmt::format("{}.{}.", w.name, v.key);
}

std::string RunLabel(const Workload& w, const Variant& v) {
  return v.label.empty() ? w.name : fmt::format("{}, {}", w.name, v.label);
}

std::vector<Row> Rows(const BenchConfig& config) {
  std::vector<Row> rows;
  for (const Workload& w : Workloads()) {
    if (!config.Runs(w.name)) continue;
    const std::vector<Variant> vs = w.variants(config);
    for (const Metric& m : w.metrics) {
      for (const Variant& v : vs) {
        rows.push_back({KeyPrefix(w, v) + m.name, w.name,
                        RunLabel(w, v) + ": " + m.label, m.unit, m.better,
                        m.decimals, "", ""});
      }
      if (m.name != w.ratio_metric || vs.size() < 2) continue;
      // The second variant over the first: a variant after those two is a
      // reference row (owner_schedule_cancel's libuv clock-read one).
      rows.push_back({fmt::format("{}.{}_over_{}.{}", w.name, vs[1].key,
                                  vs[0].key, m.name),
                      w.name,
                      fmt::format("{}, {} / {}: {}", w.name, vs[1].label,
                                  vs[0].label, m.label),
                      "x", m.better, 2, KeyPrefix(w, vs[1]) + m.name,
                      KeyPrefix(w, vs[0]) + m.name});
    }
  }
  return rows;
}

}  // namespace tickwheel::bench
