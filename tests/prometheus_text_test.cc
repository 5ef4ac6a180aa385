// tests/prometheus_text_test.cc
// -----------------------------------------------------------------------------
// The Prometheus text exposition of metrics snapshots (timer/prometheus.h),
// on snapshots built by hand: the exact text of a TimerMetrics and an
// IdleTrackerMetrics, one HELP and TYPE per family with several timers in a
// scrape, exact histogram counts at raised bounds, label escaping, and every
// refusal, each of which leaves the exposition as it was.
// (tests/prometheus/parse_test.py reads the output of real timers with
// Prometheus's own Python parser.)

#include "tickwheel/timer/prometheus.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tickwheel/timer/idle_tracker_metrics.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel {
namespace {

using Type = PrometheusMetric::Type;

// A small snapshot: three runs, 0, 500 us and 2 ms late.
TimerMetrics SmallTimerMetrics() {
  TimerMetrics m;
  m.pending = 2;
  m.expired = 3;
  m.cancelled = 1;
  m.ticks = 10;
  m.catch_up_ticks = 0;
  m.wakeups = 4;
  m.worst_lateness = absl::Milliseconds(2);
  m.lateness.Record(absl::ZeroDuration());
  m.lateness.Record(absl::Microseconds(500));
  m.lateness.Record(absl::Milliseconds(2));
  return m;
}

PrometheusOptions TwoBuckets() {
  PrometheusOptions options;
  options.lateness_buckets = {absl::ZeroDuration(), absl::Milliseconds(1)};
  return options;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(PrometheusTextTest, TimerMetricsExactly) {
  const absl::StatusOr<std::string> text =
      PrometheusText(SmallTimerMetrics(), {{"timer", "main"}}, TwoBuckets());
  ASSERT_TRUE(text.ok()) << text.status();
  // 1 ms is raised to the top of the fine bucket that holds it, 1048575 ns,
  // so the 500 us run counts there and the 2 ms run only at +Inf.
  EXPECT_EQ(
      *text,
      R"(# HELP tickwheel_timer_pending_timeouts Timeouts scheduled and neither run, cancelled nor returned by stop().
# TYPE tickwheel_timer_pending_timeouts gauge
tickwheel_timer_pending_timeouts{timer="main"} 2
# HELP tickwheel_timer_expired_total Task runs started; each run of a periodic timeout counts.
# TYPE tickwheel_timer_expired_total counter
tickwheel_timer_expired_total{timer="main"} 3
# HELP tickwheel_timer_cancelled_total Timeouts cancelled, by cancel() or cancelAll().
# TYPE tickwheel_timer_cancelled_total counter
tickwheel_timer_cancelled_total{timer="main"} 1
# HELP tickwheel_timer_ticks_total Ticks processed.
# TYPE tickwheel_timer_ticks_total counter
tickwheel_timer_ticks_total{timer="main"} 10
# HELP tickwheel_timer_catch_up_ticks_total Ticks processed a full tick or more late: the worker fell behind and caught up.
# TYPE tickwheel_timer_catch_up_ticks_total counter
tickwheel_timer_catch_up_ticks_total{timer="main"} 0
# HELP tickwheel_timer_wakeups_total Returns of the worker from sleep; for a LocalTimer, advance() calls.
# TYPE tickwheel_timer_wakeups_total counter
tickwheel_timer_wakeups_total{timer="main"} 4
# HELP tickwheel_timer_worst_lateness_seconds Largest lateness of any run: its start minus its deadline.
# TYPE tickwheel_timer_worst_lateness_seconds gauge
tickwheel_timer_worst_lateness_seconds{timer="main"} 0.002
# HELP tickwheel_timer_lateness_seconds Lateness of each run: its start minus its deadline.
# TYPE tickwheel_timer_lateness_seconds histogram
tickwheel_timer_lateness_seconds_bucket{timer="main",le="0"} 1
tickwheel_timer_lateness_seconds_bucket{timer="main",le="0.001048575"} 2
tickwheel_timer_lateness_seconds_bucket{timer="main",le="+Inf"} 3
tickwheel_timer_lateness_seconds_sum{timer="main"} 0.0025
tickwheel_timer_lateness_seconds_count{timer="main"} 3
)");
}

TEST(PrometheusTextTest, IdleTrackerMetricsExactlyWithoutLabelsOrPrefix) {
  IdleTrackerMetrics m;
  m.tracked = 7;
  m.fired = 2;
  m.rearmed = 5;
  m.stale_dropped = 1;
  m.timer_ops = 9;
  m.refreshes = 30;
  m.active = 1;
  m.worst_lateness = absl::Milliseconds(150);
  m.worst_clock_lag = absl::ZeroDuration();
  PrometheusOptions options;
  options.prefix = "";
  const absl::StatusOr<std::string> text = PrometheusText(m, {}, options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            R"(# HELP idle_tracked Registrations that may still fire.
# TYPE idle_tracked gauge
idle_tracked 7
# HELP idle_fired_total on_idle calls started.
# TYPE idle_fired_total counter
idle_fired_total 2
# HELP idle_rearmed_total Wheel checks that found activity and re-armed the entry for the time left.
# TYPE idle_rearmed_total counter
idle_rearmed_total 5
# HELP idle_stale_dropped_total Wheel entries dropped because their registration had moved on.
# TYPE idle_stale_dropped_total counter
idle_stale_dropped_total 1
# HELP idle_timer_ops_total newTimeout() and cancel() calls made for registrations.
# TYPE idle_timer_ops_total counter
idle_timer_ops_total 9
# HELP idle_refreshes_total Runs of the clock-refresh task.
# TYPE idle_refreshes_total counter
idle_refreshes_total 30
# HELP idle_active Current Activate() count; 0: inactive.
# TYPE idle_active gauge
idle_active 1
# HELP idle_worst_lateness_seconds Largest time from an idle deadline to the check that fired it.
# TYPE idle_worst_lateness_seconds gauge
idle_worst_lateness_seconds 0.15
# HELP idle_worst_clock_lag_seconds Largest lag of the coarse clock behind the real clock at a refresh.
# TYPE idle_worst_clock_lag_seconds gauge
idle_worst_clock_lag_seconds 0
)");
}

TEST(PrometheusTextTest, SeveralTimersShareEachFamilysHelpAndType) {
  PrometheusOptions options = TwoBuckets();
  options.prefix = "app";
  auto scrape = PrometheusExposition::Create(options).value();
  TimerMetrics loop;
  loop.expired = 40;
  ASSERT_TRUE(
      AddMetrics(scrape, SmallTimerMetrics(), {{"timer", "main"}}).ok());
  ASSERT_TRUE(AddMetrics(scrape, loop, {{"timer", "loop"}}).ok());
  ASSERT_TRUE(
      AddMetrics(scrape, IdleTrackerMetrics{}, {{"tracker", "conns"}}).ok());
  const std::string text = scrape.ToString();
  EXPECT_EQ(Occurrences(text, "# TYPE "), 8u + 9u) << text;
  EXPECT_EQ(Occurrences(text, "# HELP "), 8u + 9u) << text;
  // A family's samples follow its TYPE line, the timers' in the order added.
  EXPECT_NE(text.find("# TYPE app_timer_expired_total counter\n"
                      "app_timer_expired_total{timer=\"main\"} 3\n"
                      "app_timer_expired_total{timer=\"loop\"} 40\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("app_timer_lateness_seconds_count{timer=\"main\"} 3\n"
                      "app_timer_lateness_seconds_bucket{timer=\"loop\","
                      "le=\"0\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("app_idle_tracked{tracker=\"conns\"} 0\n"),
            std::string::npos)
      << text;
  // AppendTo() appends: text of one's own stays in front.
  std::string body = "# my own\n";
  scrape.AppendTo(&body);
  EXPECT_EQ(body, "# my own\n" + text);
}

TEST(PrometheusTextTest, DefaultBucketsRaiseEachBoundToAFineBucketTop) {
  const std::vector<absl::Duration> bounds = DefaultLatenessBuckets();
  ASSERT_EQ(bounds.size(), 16u);
  EXPECT_EQ(bounds.front(), absl::Microseconds(100));
  EXPECT_EQ(bounds[4], absl::Microseconds(2500));
  EXPECT_EQ(bounds.back(), absl::Seconds(10));
  TimerMetrics m;
  // 1 ms exactly, and 1.04 ms, both under the raised 1 ms bound
  // (1.048575 ms); 1.05 ms above it.
  m.lateness.Record(absl::Milliseconds(1));
  m.lateness.Record(absl::Microseconds(1040));
  m.lateness.Record(absl::Microseconds(1050));
  const std::string text = PrometheusText(m).value();
  EXPECT_EQ(Occurrences(text, "tickwheel_timer_lateness_seconds_bucket{"), 17u)
      << text;
  EXPECT_NE(text.find("_bucket{le=\"0.000524287\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("_bucket{le=\"0.001048575\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("_bucket{le=\"0.002621439\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("_bucket{le=\"10.737418239\"} 3\n"), std::string::npos)
      << text;
  // Bounds that are fine bucket tops already are kept as they are.
  PrometheusOptions exact;
  exact.lateness_buckets = {LatenessHistogram::BucketUpperBound(100),
                            LatenessHistogram::BucketUpperBound(101)};
  const std::string kept = PrometheusText(m, {}, exact).value();
  EXPECT_EQ(Occurrences(kept, "_bucket{"), 3u) << kept;
}

TEST(PrometheusTextTest, LabelValuesAreEscaped) {
  PrometheusExposition scrape = PrometheusExposition::Create().value();
  ASSERT_TRUE(scrape
                  .Add({{"path", "C:\\tmp \"x\"\nnext"}, {"name", "zürich"}},
                       {{Type::kGauge, "g", "A \\ help\nline \"quoted\".", 1}})
                  .ok());
  EXPECT_EQ(scrape.ToString(),
            "# HELP g A \\\\ help\\nline \"quoted\".\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\tmp \\\"x\\\"\\nnext\",name=\"zürich\"} 1\n");
}

TEST(PrometheusTextTest, GaugesSpellNanAndInfinities) {
  PrometheusExposition scrape = PrometheusExposition::Create().value();
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(
      scrape.Add({{"k", "nan"}}, {{Type::kGauge, "g", "", std::nan("")}}).ok());
  ASSERT_TRUE(scrape.Add({{"k", "inf"}}, {{Type::kGauge, "g", "", inf}}).ok());
  ASSERT_TRUE(
      scrape.Add({{"k", "-inf"}}, {{Type::kGauge, "g", "", -inf}}).ok());
  ASSERT_TRUE(
      scrape.Add({{"k", "big"}}, {{Type::kGauge, "g", "", 1e300}}).ok());
  EXPECT_EQ(scrape.ToString(),
            "# TYPE g gauge\n"
            "g{k=\"nan\"} NaN\ng{k=\"inf\"} +Inf\ng{k=\"-inf\"} -Inf\n"
            "g{k=\"big\"} 1e+300\n");
}

// Each refusal names the problem and leaves the exposition as it was.
void ExpectRefused(PrometheusExposition& scrape, const PrometheusLabels& labels,
                   const std::vector<PrometheusMetric>& metrics,
                   absl::StatusCode code) {
  const std::string before = scrape.ToString();
  const absl::Status s = scrape.Add(labels, metrics);
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_EQ(scrape.ToString(), before);
}

TEST(PrometheusTextTest, BadLabelsAreRefused) {
  PrometheusExposition scrape = PrometheusExposition::Create().value();
  const std::vector<PrometheusMetric> g = {{Type::kGauge, "g", "", 1}};
  const auto kBad = absl::StatusCode::kInvalidArgument;
  ExpectRefused(scrape, {{"", "v"}}, g, kBad);
  ExpectRefused(scrape, {{"1st", "v"}}, g, kBad);
  ExpectRefused(scrape, {{"a-b", "v"}}, g, kBad);
  ExpectRefused(scrape, {{"__name__", "v"}}, g, kBad);
  ExpectRefused(scrape, {{"le", "v"}}, g, kBad);
  ExpectRefused(scrape, {{"a", "1"}, {"a", "2"}}, g, kBad);
  ExpectRefused(scrape, {{"a", "\xff"}}, g, kBad);          // not UTF-8
  ExpectRefused(scrape, {{"a", "\xc3"}}, g, kBad);          // truncated
  ExpectRefused(scrape, {{"a", "\xc0\xaf"}}, g, kBad);      // overlong
  ExpectRefused(scrape, {{"a", "\xed\xa0\x80"}}, g, kBad);  // a surrogate
  EXPECT_TRUE(scrape.Add({{"_a1", "ok"}}, g).ok());
}

TEST(PrometheusTextTest, ConflictingMetricsAreRefused) {
  PrometheusExposition scrape = PrometheusExposition::Create().value();
  ASSERT_TRUE(AddMetrics(scrape, SmallTimerMetrics(), {{"timer", "a"}}).ok());
  const std::string name = scrape.MetricName("timer_expired_total");
  const LatenessHistogram h;
  const auto kBad = absl::StatusCode::kInvalidArgument;
  // The same labels again, for every family or one.
  const std::string before = scrape.ToString();
  EXPECT_EQ(AddMetrics(scrape, TimerMetrics{}, {{"timer", "a"}}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(scrape.ToString(), before);
  ExpectRefused(
      scrape, {{"timer", "a"}},
      {{Type::kGauge, "fresh", "", 1},
       {Type::kCounter, name,
        "Task runs started; each run of a periodic timeout counts.", 1}},
      absl::StatusCode::kAlreadyExists);
  // A family of another type or help.
  ExpectRefused(scrape, {{"timer", "b"}}, {{Type::kGauge, name, "", 1}}, kBad);
  ExpectRefused(scrape, {{"timer", "b"}},
                {{Type::kCounter, name, "other help", 1}}, kBad);
  // Names: bad, twice in one call, or a histogram's series.
  ExpectRefused(scrape, {}, {{Type::kGauge, "bad-name", "", 1}}, kBad);
  ExpectRefused(scrape, {}, {{Type::kGauge, "", "", 1}}, kBad);
  ExpectRefused(
      scrape, {},
      {{Type::kGauge, "twice", "", 1}, {Type::kGauge, "twice", "", 2}}, kBad);
  ExpectRefused(scrape, {},
                {{Type::kGauge, "tickwheel_timer_lateness_seconds_sum", "", 1}},
                kBad);
  ExpectRefused(
      scrape, {},
      {{Type::kHistogram, "h", "", 0, &h}, {Type::kCounter, "h_count", "", 1}},
      kBad);
  ExpectRefused(
      scrape, {},
      {{Type::kGauge, "x_bucket", "", 1}, {Type::kHistogram, "x", "", 0, &h}},
      kBad);
  // Values: a counter below zero or not finite, a histogram without one.
  ExpectRefused(scrape, {}, {{Type::kCounter, "c_total", "", -1}}, kBad);
  ExpectRefused(scrape, {}, {{Type::kCounter, "c_total", "", std::nan("")}},
                kBad);
  ExpectRefused(scrape, {}, {{Type::kHistogram, "h", "", 0, nullptr}}, kBad);
  // Another timer's labels are welcome.
  EXPECT_TRUE(AddMetrics(scrape, TimerMetrics{}, {{"timer", "b"}}).ok());
}

TEST(PrometheusTextTest, BadOptionsAreRefused) {
  const auto create = [](std::string prefix, std::vector<absl::Duration> b) {
    PrometheusOptions options;
    options.prefix = std::move(prefix);
    options.lateness_buckets = std::move(b);
    return PrometheusExposition::Create(std::move(options)).status();
  };
  const auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(create("my-app", {}).code(), kBad);
  EXPECT_EQ(create("9app", {}).code(), kBad);
  EXPECT_EQ(create("a", {absl::Milliseconds(2), absl::Milliseconds(1)}).code(),
            kBad);
  EXPECT_EQ(create("a", {absl::Milliseconds(1), absl::Milliseconds(1)}).code(),
            kBad);
  EXPECT_EQ(create("a", {absl::Milliseconds(-1)}).code(), kBad);
  EXPECT_EQ(create("a", {absl::InfiniteDuration()}).code(), kBad);
  EXPECT_TRUE(create("ns:app_1", {}).ok());
  // Bounds that rise to the same fine bucket's top are written once: with
  // no bound at all, the +Inf bucket alone.
  const std::string one =
      PrometheusText(TimerMetrics{}, {},
                     {.lateness_buckets = {absl::Microseconds(1000),
                                           absl::Microseconds(1001)}})
          .value();
  EXPECT_EQ(Occurrences(one, "_bucket{"), 2u) << one;
  const std::string none =
      PrometheusText(TimerMetrics{}, {}, {.lateness_buckets = {}}).value();
  EXPECT_EQ(Occurrences(none, "_bucket{"), 1u) << none;
}

}  // namespace
}  // namespace tickwheel
