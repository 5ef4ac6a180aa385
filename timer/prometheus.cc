#include "tickwheel/timer/prometheus.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tickwheel {

namespace {

using Type = PrometheusMetric::Type;

bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [a-zA-Z_:][a-zA-Z0-9_:]*, or empty when `allow_empty`.
bool IsMetricName(std::string_view s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!(IsLetter(c) || c == ':' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

// [a-zA-Z_][a-zA-Z0-9_]*
bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!(IsLetter(s[i]) || (i > 0 && IsDigit(s[i])))) return false;
  }
  return true;
}

// Well-formed UTF-8: no stray continuation byte, no truncated, overlong or
// surrogate sequence, nothing above U+10FFFF.
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kSmallest[extra] || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += 1 + extra;
  }
  return true;
}

// `text` escaped as the format wants it: backslash and line feed always, the
// double quote inside a label value (between quotes) but not in help text.
void AppendEscaped(std::string_view text, bool in_quotes, std::string* out) {
  for (const char c : text) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && in_quotes) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// A sample value as the format spells it: the shortest text that reads back
// as the same double; NaN, +Inf, -Inf.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string FormatSeconds(int64_t nanos) {
  return FormatValue(static_cast<double>(nanos) / 1e9);
}

// The labels as they go between braces: name="value",... (empty for none).
absl::StatusOr<std::string> RenderLabels(const PrometheusLabels& labels) {
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& [name, value] = labels[i];
    if (!IsLabelName(name)) {
      return absl::InvalidArgumentError(fmt::format(
          "label name \"{}\" does not match [a-zA-Z_][a-zA-Z0-9_]*", name));
    }
    if (name.starts_with("__")) {
      return absl::InvalidArgumentError(fmt::format(
          "label name \"{}\": names starting with \"__\" are reserved", name));
    }
    if (name == "le") {
      return absl::InvalidArgumentError(
          "label name \"le\" is the histogram buckets'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].first == name) {
        return absl::InvalidArgumentError(
            fmt::format("label name \"{}\" given twice", name));
      }
    }
    if (!IsUtf8(value)) {
      return absl::InvalidArgumentError(
          fmt::format("the value of label \"{}\" is not UTF-8", name));
    }
    if (i > 0) out.push_back(',');
    out.append(name);
    out.append("=\"");
    AppendEscaped(value, /*in_quotes=*/true, &out);
    out.push_back('"');
  }
  return out;
}

// One sample line: name{labels[,extra]} value
void AppendSample(std::string_view name, const std::string& labels,
                  std::string_view extra, std::string_view value,
                  std::string* out) {
  out->append(name);
  if (!labels.empty() || !extra.empty()) {
    out->push_back('{');
    out->append(labels);
    if (!labels.empty() && !extra.empty()) out->push_back(',');
    out->append(extra);
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value);
  out->push_back('\n');
}

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

constexpr std::string_view kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

}  // namespace

std::vector<absl::Duration> DefaultLatenessBuckets() {
  std::vector<absl::Duration> bounds;
  for (absl::Duration decade = absl::Microseconds(100);
       decade <= absl::Seconds(1); decade *= 10) {
    bounds.push_back(decade);
    bounds.push_back(decade * 2.5);
    bounds.push_back(decade * 5);
  }
  bounds.push_back(absl::Seconds(10));
  return bounds;
}

PrometheusExposition::PrometheusExposition(PrometheusOptions options,
                                           std::vector<int64_t> bounds_nanos)
    : options_(std::move(options)), bounds_nanos_(std::move(bounds_nanos)) {}

absl::StatusOr<PrometheusExposition> PrometheusExposition::Create(
    PrometheusOptions options) {
  if (!IsMetricName(options.prefix, /*allow_empty=*/true)) {
    return absl::InvalidArgumentError(
        fmt::format("prefix \"{}\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*",
                    options.prefix));
  }
  std::vector<int64_t> bounds;
  std::optional<absl::Duration> previous;
  for (const absl::Duration bound : options.lateness_buckets) {
    if (bound < absl::ZeroDuration() || bound == absl::InfiniteDuration()) {
      return absl::InvalidArgumentError(
          fmt::format("lateness bucket bound {} is not finite and >= 0 (the "
                      "+Inf bucket is always written)",
                      absl::FormatDuration(bound)));
    }
    if (previous.has_value() && bound <= *previous) {
      return absl::InvalidArgumentError(fmt::format(
          "lateness bucket bounds must increase: {} after {}",
          absl::FormatDuration(bound), absl::FormatDuration(*previous)));
    }
    previous = bound;
    // Raised to the top of the fine bucket that holds it, so that the count
    // at the bound is exact.
    const int64_t top =
        absl::ToInt64Nanoseconds(LatenessHistogram::BucketUpperBound(
            LatenessHistogram::BucketIndex(bound)));
    if (bounds.empty() || bounds.back() < top) bounds.push_back(top);
  }
  return PrometheusExposition(std::move(options), std::move(bounds));
}

std::string PrometheusExposition::MetricName(std::string_view name) const {
  if (options_.prefix.empty()) return std::string(name);
  return fmt::format("{}_{}", options_.prefix, name);
}

absl::Status PrometheusExposition::Check(const PrometheusMetric& metric,
                                         const std::string& rendered) const {
  if (!IsMetricName(metric.name, /*allow_empty=*/false)) {
    return absl::InvalidArgumentError(fmt::format(
        "metric name \"{}\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*",
        metric.name));
  }
  if (metric.type == Type::kCounter &&
      !(std::isfinite(metric.value) && metric.value >= 0)) {
    return absl::InvalidArgumentError(
        fmt::format("counter {} must be finite and >= 0, got {}", metric.name,
                    FormatValue(metric.value)));
  }
  if (metric.type == Type::kHistogram && metric.histogram == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("histogram {} has no histogram", metric.name));
  }
  const auto it = index_.find(metric.name);
  if (it != index_.end()) {
    const Family& family = families_[it->second];
    if (family.type != metric.type || family.help != metric.help) {
      return absl::InvalidArgumentError(fmt::format(
          "metric {} is a {} with help \"{}\" already, not a {} with help "
          "\"{}\"",
          metric.name, TypeName(family.type), family.help,
          TypeName(metric.type), metric.help));
    }
    if (family.series.contains(rendered)) {
      return absl::AlreadyExistsError(
          fmt::format("metric {} has a series with labels {{{}}} already",
                      metric.name, rendered));
    }
  }
  return absl::OkStatus();
}

void PrometheusExposition::WriteSamples(const PrometheusMetric& metric,
                                        const std::string& rendered,
                                        std::string* out) const {
  if (metric.type != Type::kHistogram) {
    AppendSample(metric.name, rendered, "", FormatValue(metric.value), out);
    return;
  }
  const LatenessHistogram& h = *metric.histogram;
  const std::string bucket = metric.name + "_bucket";
  // Each bound is a fine bucket's top (Create()), so the cumulative count
  // of the fine buckets up to it is exactly the runs at or below it.
  int64_t cumulative = 0;
  int i = 0;
  for (const int64_t bound : bounds_nanos_) {
    while (i < LatenessHistogram::kBuckets &&
           absl::ToInt64Nanoseconds(LatenessHistogram::BucketUpperBound(i)) <=
               bound) {
      cumulative += h.BucketCount(i++);
    }
    AppendSample(bucket, rendered,
                 fmt::format("le=\"{}\"", FormatSeconds(bound)),
                 fmt::format("{}", cumulative), out);
  }
  AppendSample(bucket, rendered, "le=\"+Inf\"", fmt::format("{}", h.count()),
               out);
  AppendSample(metric.name + "_sum", rendered, "",
               FormatSeconds(absl::ToInt64Nanoseconds(h.sum())), out);
  AppendSample(metric.name + "_count", rendered, "",
               fmt::format("{}", h.count()), out);
}

absl::Status PrometheusExposition::Add(
    const PrometheusLabels& labels,
    const std::vector<PrometheusMetric>& metrics) {
  absl::StatusOr<std::string> rendered = RenderLabels(labels);
  if (!rendered.ok()) return rendered.status();
  // The type of a family name, among those present and those of `metrics`
  // before index `upto`.
  auto type_of = [&](std::string_view name,
                     size_t upto) -> std::optional<Type> {
    if (const auto it = index_.find(std::string(name)); it != index_.end()) {
      return families_[it->second].type;
    }
    for (size_t k = 0; k < upto; ++k) {
      if (metrics[k].name == name) return metrics[k].type;
    }
    return std::nullopt;
  };
  for (size_t k = 0; k < metrics.size(); ++k) {
    const PrometheusMetric& m = metrics[k];
    if (absl::Status s = Check(m, *rendered); !s.ok()) return s;
    for (size_t j = 0; j < k; ++j) {
      if (metrics[j].name == m.name) {
        return absl::InvalidArgumentError(
            fmt::format("metric {} given twice in one Add()", m.name));
      }
    }
    // A histogram's series names are its own: x_bucket, x_sum and x_count
    // beside a histogram x would read as part of it.
    for (const std::string_view suffix : kHistogramSuffixes) {
      const bool taken =
          (m.type == Type::kHistogram &&
           type_of(m.name + std::string(suffix), k).has_value()) ||
          (m.name.ends_with(suffix) &&
           type_of(std::string_view(m.name).substr(
                       0, m.name.size() - suffix.size()),
                   k) == Type::kHistogram);
      if (taken) {
        return absl::InvalidArgumentError(fmt::format(
            "metric {} collides with a histogram's {} series", m.name, suffix));
      }
    }
  }
  for (const PrometheusMetric& m : metrics) {
    auto [it, inserted] = index_.try_emplace(m.name, families_.size());
    if (inserted) {
      families_.push_back(Family{m.name, m.help, m.type, {}, {}});
    }
    Family& family = families_[it->second];
    WriteSamples(m, *rendered, &family.samples);
    family.series.insert(*rendered);
  }
  return absl::OkStatus();
}

void PrometheusExposition::AppendTo(std::string* out) const {
  for (const Family& family : families_) {
    if (!family.help.empty()) {
      out->append(fmt::format("# HELP {} ", family.name));
      AppendEscaped(family.help, /*in_quotes=*/false, out);
      out->push_back('\n');
    }
    out->append(
        fmt::format("# TYPE {} {}\n", family.name, TypeName(family.type)));
    out->append(family.samples);
  }
}

std::string PrometheusExposition::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

absl::Status AddMetrics(PrometheusExposition& exposition,
                        const TimerMetrics& metrics,
                        const PrometheusLabels& labels) {
  const auto name = [&](std::string_view n) {
    return exposition.MetricName(n);
  };
  const auto count = [](int64_t v) { return static_cast<double>(v); };
  return exposition.Add(
      labels,
      {
          {Type::kGauge, name("timer_pending_timeouts"),
           "Timeouts scheduled and neither run, cancelled nor returned by "
           "stop().",
           count(metrics.pending)},
          {Type::kCounter, name("timer_expired_total"),
           "Task runs started; each run of a periodic timeout counts.",
           count(metrics.expired)},
          {Type::kCounter, name("timer_cancelled_total"),
           "Timeouts cancelled, by cancel() or cancelAll().",
           count(metrics.cancelled)},
          {Type::kCounter, name("timer_ticks_total"), "Ticks processed.",
           count(metrics.ticks)},
          {Type::kCounter, name("timer_catch_up_ticks_total"),
           "Ticks processed a full tick or more late: the worker fell behind "
           "and caught up.",
           count(metrics.catch_up_ticks)},
          {Type::kCounter, name("timer_wakeups_total"),
           "Returns of the worker from sleep; for a LocalTimer, advance() "
           "calls.",
           count(metrics.wakeups)},
          {Type::kGauge, name("timer_worst_lateness_seconds"),
           "Largest lateness of any run: its start minus its deadline.",
           absl::ToDoubleSeconds(metrics.worst_lateness)},
          {Type::kHistogram, name("timer_lateness_seconds"),
           "Lateness of each run: its start minus its deadline.", 0,
           &metrics.lateness},
      });
}

absl::Status AddMetrics(PrometheusExposition& exposition,
                        const IdleTrackerMetrics& metrics,
                        const PrometheusLabels& labels) {
  const auto name = [&](std::string_view n) {
    return exposition.MetricName(n);
  };
  const auto count = [](int64_t v) { return static_cast<double>(v); };
  return exposition.Add(
      labels,
      {
          {Type::kGauge, name("idle_tracked"),
           "Registrations that may still fire.", count(metrics.tracked)},
          {Type::kCounter, name("idle_fired_total"), "on_idle calls started.",
           count(metrics.fired)},
          {Type::kCounter, name("idle_rearmed_total"),
           "Wheel checks that found activity and re-armed the entry for the "
           "time left.",
           count(metrics.rearmed)},
          {Type::kCounter, name("idle_stale_dropped_total"),
           "Wheel entries dropped because their registration had moved on.",
           count(metrics.stale_dropped)},
          {Type::kCounter, name("idle_timer_ops_total"),
           "newTimeout() and cancel() calls made for registrations.",
           count(metrics.timer_ops)},
          {Type::kCounter, name("idle_refreshes_total"),
           "Runs of the clock-refresh task.", count(metrics.refreshes)},
          {Type::kGauge, name("idle_active"),
           "Current Activate() count; 0: inactive.", count(metrics.active)},
          {Type::kGauge, name("idle_worst_lateness_seconds"),
           "Largest time from an idle deadline to the check that fired it.",
           absl::ToDoubleSeconds(metrics.worst_lateness)},
          {Type::kGauge, name("idle_worst_clock_lag_seconds"),
           "Largest lag of the coarse clock behind the real clock at a "
           "refresh.",
           absl::ToDoubleSeconds(metrics.worst_clock_lag)},
      });
}

absl::StatusOr<std::string> PrometheusText(const TimerMetrics& metrics,
                                           const PrometheusLabels& labels,
                                           const PrometheusOptions& options) {
  return internal::PrometheusTextOf(metrics, labels, options);
}

absl::StatusOr<std::string> PrometheusText(const IdleTrackerMetrics& metrics,
                                           const PrometheusLabels& labels,
                                           const PrometheusOptions& options) {
  return internal::PrometheusTextOf(metrics, labels, options);
}

}  // namespace tickwheel
