// tools/bench/results.h
// -----------------------------------------------------------------------------
// One invocation's samples (per timer, key and repetition), failed checks and
// notes, and their median [min-max]. A ratio row's sample is computed from
// the two values one timer reported in one repetition, so a ratio never
// mixes repetitions. Thread-compatible.

#ifndef TICKWHEEL_TOOLS_BENCH_RESULTS_H_
#define TICKWHEEL_TOOLS_BENCH_RESULTS_H_

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tools/bench/workloads.h"

namespace tickwheel::bench {

struct Summary {
  double median = 0, min = 0, max = 0;
  int count = 0;
};

struct Failure {
  std::string run, impl;  // "schedule, 2 producers", "asio"
  int rep;
  std::string message;
};

class Results {
 public:
  Results(std::vector<Row> rows, std::vector<std::string> impls)
      : rows_(std::move(rows)), impls_(std::move(impls)) {}

  // One run's output: values under `key_prefix` ("schedule.p2."), failures
  // and notes under `run` ("schedule, 2 producers").
  void Record(const std::string& run, const std::string& key_prefix,
              const std::string& impl, int rep, const RepOutput& out) {
    auto& mine = samples_[impl];
    for (const auto& [name, value] : out.values)
      mine[key_prefix + name][rep] = value;
    for (const Row& r : rows_) {
      if (r.numerator.empty()) continue;
      auto &num = mine[r.numerator], &den = mine[r.denominator];
      if (num.count(rep) && den.count(rep) && den[rep] > 0)
        mine[r.key][rep] = num[rep] / den[rep];
    }
    for (const std::string& f : out.failures)
      failures_.push_back({run, impl, rep, f});
    for (const std::string& n : out.notes) {
      notes_.push_back(fmt::format("{}, {}, rep {}: {}", run, impl, rep, n));
    }
  }

  // A note on the whole run rather than on one repetition.
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }

  std::vector<double> Samples(const std::string& impl,
                              const std::string& key) const {
    std::vector<double> out;
    if (auto i = samples_.find(impl); i != samples_.end()) {
      if (auto k = i->second.find(key); k != i->second.end()) {
        for (const auto& [rep, value] : k->second) out.push_back(value);
      }
    }
    return out;
  }

  std::optional<Summary> Summarize(const std::string& impl,
                                   const std::string& key) const {
    std::vector<double> s = Samples(impl, key);
    if (s.empty()) return std::nullopt;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return Summary{(s[(n - 1) / 2] + s[n / 2]) / 2, s.front(), s.back(),
                   static_cast<int>(n)};
  }

  const std::vector<Row>& rows() const { return rows_; }
  const std::vector<std::string>& impls() const { return impls_; }
  const std::vector<Failure>& failures() const { return failures_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::vector<Row> rows_;
  std::vector<std::string> impls_;
  std::map<std::string, std::map<std::string, std::map<int, double>>>
      samples_;  // impl, key, rep
  std::vector<Failure> failures_;
  std::vector<std::string> notes_;
};

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_RESULTS_H_
