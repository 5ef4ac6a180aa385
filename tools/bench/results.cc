#include "tools/bench/results.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tickwheel::bench {

Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.count = static_cast<int>(n);
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2]
                        : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return s;
}

double Quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

std::string KeyW1NsPerOp(int p) { return fmt::format("W1.ns_per_op.P{}", p); }
std::string KeyW1CpuNsPerOp(int p) { return fmt::format("W1.cpu_ns_per_op.P{}", p); }
std::string KeyW1Unprocessed(int p) { return fmt::format("W1.unprocessed.P{}", p); }
std::string KeyW2NsPerPair(int p) { return fmt::format("W2.ns_per_pair.P{}", p); }
std::string KeyW2CpuNsPerPair(int p) { return fmt::format("W2.cpu_ns_per_pair.P{}", p); }
std::string KeyW2Pending(int p) { return fmt::format("W2.pending_after_3_ticks.P{}", p); }
std::string KeyW2RssHeld(int p) { return fmt::format("W2.rss_held_mb.P{}", p); }
std::string KeyW2RssPeak(int p) { return fmt::format("W2.rss_peak_mb.P{}", p); }

std::vector<MetricDef> MetricDefs(const BenchConfig& c) {
  std::vector<MetricDef> d;
  for (int p : c.producers) {
    d.push_back({KeyW1NsPerOp(p), "W1", fmt::format("W1 schedule, P={}", p),
                 "ns/op", Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW1CpuNsPerOp(p), "W1",
                 fmt::format("W1 schedule, P={}, caller CPU", p), "ns/op",
                 Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW1Unprocessed(p), "W1",
                 fmt::format("W1 returned by stop, P={}", p), "count",
                 Better::kNeither, 0});
  }
  for (int p : c.producers) {
    d.push_back({KeyW2NsPerPair(p), "W2",
                 fmt::format("W2 schedule+cancel, P={}", p), "ns/pair",
                 Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW2CpuNsPerPair(p), "W2",
                 fmt::format("W2 schedule+cancel, P={}, caller CPU", p),
                 "ns/pair", Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW2Pending(p), "W2",
                 fmt::format("W2 pending after 3 ticks, P={}", p), "count",
                 Better::kNeither, 0});
  }
  for (int p : c.producers) {
    d.push_back({KeyW2RssHeld(p), "W2",
                 fmt::format("W2 RSS held after 3 ticks, P={}", p), "MB",
                 Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW2RssPeak(p), "W2", fmt::format("W2 RSS peak, P={}", p),
                 "MB", Better::kLower, 1});
  }
  d.push_back({kKeyW3P50, "W3", "W3 lateness p50", "us", Better::kLower, 0});
  d.push_back({kKeyW3P99, "W3", "W3 lateness p99", "us", Better::kLower, 0});
  d.push_back({kKeyW3Max, "W3", "W3 lateness max", "us", Better::kLower, 0});
  d.push_back({kKeyW3Early, "W3", "W3 early fires", "count", Better::kNeither, 0});
  d.push_back({kKeyW4Bytes, "W4", "W4 memory per pending timeout", "B",
               Better::kLower, 1});
  d.push_back({kKeyW5Cpu, "W5", "W5 idle CPU time", "s", Better::kLower, 3});
  d.push_back({kKeyW5Wakeups, "W5", "W5 idle wake-ups", "1/s", Better::kLower, 1});
  d.push_back({kKeyW6CpuRate, "W6", "W6 expiries per worker CPU second", "M/s",
               Better::kHigher, 2});
  d.push_back({kKeyW6Rate, "W6", "W6 expiries per wall second", "M/s",
               Better::kHigher, 2});
  d.push_back({kKeyW6LastDelay, "W6", "W6 last deadline -> last run", "ms",
               Better::kLower, 1});
  return d;
}

Results::Results(const BenchConfig& config, std::vector<std::string> impls)
    : impls_(std::move(impls)) {
  for (MetricDef& d : MetricDefs(config)) {
    if (config.Runs(d.workload)) defs_.push_back(std::move(d));
  }
}

void Results::Record(const std::string& workload, const std::string& impl,
                     int rep, RepOutput out) {
  for (const auto& [key, value] : out.values) samples_[impl][key].push_back(value);
  for (std::string& f : out.failures) {
    failures_.push_back({workload, impl, rep, std::move(f)});
  }
  for (const std::string& n : out.notes) {
    notes_.push_back(fmt::format("{} {} rep {}: {}", workload, impl, rep, n));
  }
  auto& l = lateness_[impl];
  l.insert(l.end(), out.lateness_us.begin(), out.lateness_us.end());
  if (!out.counters.empty()) {
    counters_[fmt::format("{}/{}/rep{}", workload, impl, rep)] =
        std::move(out.counters);
  }
}

const std::vector<double>& Results::Samples(const std::string& impl,
                                            const std::string& key) const {
  static const std::vector<double> kEmpty;
  auto i = samples_.find(impl);
  if (i == samples_.end()) return kEmpty;
  auto k = i->second.find(key);
  return k == i->second.end() ? kEmpty : k->second;
}

std::optional<Summary> Results::Summarize(const std::string& impl,
                                          const std::string& key) const {
  const std::vector<double>& s = Samples(impl, key);
  if (s.empty()) return std::nullopt;
  return bench::Summarize(s);
}

std::vector<double> Results::Lateness(const std::string& impl) const {
  auto i = lateness_.find(impl);
  if (i == lateness_.end()) return {};
  std::vector<double> v = i->second;
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace tickwheel::bench
