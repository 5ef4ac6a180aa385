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
std::string KeyW1Throughput(int p) { return fmt::format("W1.throughput_mops.P{}", p); }
std::string KeyW1OthersCpuNsPerOp(int p) {
  return fmt::format("W1.others_cpu_ns_per_op.P{}", p);
}
std::string KeyW1Scaling(int p) { return fmt::format("W1.throughput_scaling.P{}", p); }
std::string KeyW7NsPerOp(int d) { return fmt::format("W7.ns_per_op.D{}", d); }
std::string KeyW7CpuNsPerOp(int d) { return fmt::format("W7.cpu_ns_per_op.D{}", d); }
std::string KeyW7Unprocessed(int d) { return fmt::format("W7.unprocessed.D{}", d); }

namespace {

bool HasProducers(const BenchConfig& c, int p) {
  return std::find(c.producers.begin(), c.producers.end(), p) != c.producers.end();
}

// W7's ratio rows need two distinct depths (w7_depths is sorted and unique).
bool HasW7Ratio(const BenchConfig& c) { return c.w7_depths.size() >= 2; }

}  // namespace

std::vector<DerivedRatio> DerivedRatios(const BenchConfig& c) {
  std::vector<DerivedRatio> r;
  if (HasProducers(c, 1)) {
    for (int p : c.producers) {
      if (p != 1) r.push_back({KeyW1Scaling(p), KeyW1Throughput(p), KeyW1Throughput(1)});
    }
  }
  if (HasW7Ratio(c)) {
    const int lo = c.w7_depths.front(), hi = c.w7_depths.back();
    r.push_back({kKeyW7Ratio, KeyW7NsPerOp(hi), KeyW7NsPerOp(lo)});
    r.push_back({kKeyW7CpuRatio, KeyW7CpuNsPerOp(hi), KeyW7CpuNsPerOp(lo)});
  }
  return r;
}

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
    d.push_back({KeyW1OthersCpuNsPerOp(p), "W1",
                 fmt::format("W1 timer's own threads, P={}, CPU", p), "ns/op",
                 Better::kLower, 1});
  }
  for (int p : c.producers) {
    d.push_back({KeyW1Throughput(p), "W1",
                 fmt::format("W1 aggregate throughput, P={}", p), "M/s",
                 Better::kHigher, 2});
  }
  if (HasProducers(c, 1)) {
    for (int p : c.producers) {
      if (p == 1) continue;
      d.push_back({KeyW1Scaling(p), "W1",
                   fmt::format("W1 throughput P={} / P=1", p), "x",
                   Better::kHigher, 2});
    }
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
  for (int depth : c.w7_depths) {
    d.push_back({KeyW7NsPerOp(depth), "W7",
                 fmt::format("W7 schedule, D={} pending", depth), "ns/op",
                 Better::kLower, 1});
  }
  for (int depth : c.w7_depths) {
    d.push_back({KeyW7CpuNsPerOp(depth), "W7",
                 fmt::format("W7 schedule, D={} pending, caller CPU", depth),
                 "ns/op", Better::kLower, 1});
  }
  if (HasW7Ratio(c)) {
    const int lo = c.w7_depths.front(), hi = c.w7_depths.back();
    d.push_back({kKeyW7Ratio, "W7", fmt::format("W7 schedule, D={} / D={}", hi, lo),
                 "x", Better::kLower, 2});
    d.push_back({kKeyW7CpuRatio, "W7",
                 fmt::format("W7 schedule, D={} / D={}, caller CPU", hi, lo), "x",
                 Better::kLower, 2});
  }
  for (int depth : c.w7_depths) {
    d.push_back({KeyW7Unprocessed(depth), "W7",
                 fmt::format("W7 returned by stop, D={}", depth), "count",
                 Better::kNeither, 0});
  }
  d.push_back({kKeyW8DeadlineLast, "W8", "W8 same deadline: last run - deadline",
               "ms", Better::kLower, 1});
  d.push_back({kKeyW8DeadlineP99, "W8", "W8 same deadline: lateness p99", "ms",
               Better::kLower, 1});
  d.push_back({kKeyW8DeadlineEarly, "W8", "W8 same deadline: early fires", "count",
               Better::kNeither, 0});
  d.push_back({kKeyW8DeadlineSchedule, "W8", "W8 same deadline: scheduling took",
               "ms", Better::kNeither, 0});
  d.push_back({kKeyW8CountedLast, "W8", "W8 same deadline, counted: last run - deadline",
               "ms", Better::kLower, 1});
  d.push_back({kKeyW8CountedP99, "W8", "W8 same deadline, counted: lateness p99", "ms",
               Better::kLower, 1});
  d.push_back({kKeyW8CountedSchedule, "W8", "W8 same deadline, counted: scheduling took",
               "ms", Better::kNeither, 0});
  d.push_back({kKeyW8DelayMax, "W8", "W8 same delay: lateness max", "ms",
               Better::kLower, 1});
  d.push_back({kKeyW8DelayP99, "W8", "W8 same delay: lateness p99", "ms",
               Better::kLower, 1});
  d.push_back({kKeyW8DelayEarly, "W8", "W8 same delay: early fires", "count",
               Better::kNeither, 0});
  d.push_back({kKeyW8DelaySchedule, "W8", "W8 same delay: scheduling took", "ms",
               Better::kNeither, 0});
  d.push_back({kKeyW9CpuPercent, "W9", "W9 idle CPU, N pending", "% core",
               Better::kLower, 2});
  d.push_back({kKeyW9Wakeups, "W9", "W9 idle wake-ups, N pending", "1/s",
               Better::kLower, 1});
  d.push_back({kKeyW9Window, "W9", "W9 idle window measured", "s",
               Better::kNeither, 2});
  return d;
}

Results::Results(const BenchConfig& config, std::vector<std::string> impls)
    : ratios_(DerivedRatios(config)), impls_(std::move(impls)) {
  for (MetricDef& d : MetricDefs(config)) {
    if (config.Runs(d.workload)) defs_.push_back(std::move(d));
  }
}

void Results::AddSample(const std::string& impl, const std::string& key,
                        int rep, double value) {
  samples_[impl][key].push_back(value);
  by_rep_[impl][key][rep] = value;
}

void Results::Record(const std::string& workload, const std::string& impl,
                     int rep, RepOutput out) {
  for (const auto& [key, value] : out.values) AddSample(impl, key, rep, value);
  auto& mine = by_rep_[impl];
  for (const DerivedRatio& r : ratios_) {
    if (mine[r.key].count(rep) != 0) continue;
    auto num = mine[r.numerator].find(rep);
    auto den = mine[r.denominator].find(rep);
    if (num == mine[r.numerator].end() || den == mine[r.denominator].end() ||
        den->second <= 0) {
      continue;
    }
    AddSample(impl, r.key, rep, num->second / den->second);
  }
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
