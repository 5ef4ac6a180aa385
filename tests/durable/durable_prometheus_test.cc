// tests/durable/durable_prometheus_test.cc
// -----------------------------------------------------------------------------
// A DurableTimer's metrics in the Prometheus text exposition
// (durable/prometheus.h), on a snapshot built by hand, so no Redis: the exact
// text, and one scrape with a Timer's metrics beside it.
// (tests/prometheus/parse_test.py reads a real DurableTimer's with
// Prometheus's own parser.)

#include "tickwheel/durable/prometheus.h"

#include <string>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/timer/metrics.h"
#include "tickwheel/timer/prometheus.h"

namespace tickwheel::durable {
namespace {

DurableMetrics SmallDurableMetrics() {
  DurableMetrics m;
  m.scheduled = 5;
  m.delivered = 4;
  m.acknowledged = 3;
  m.redelivered = 1;
  m.handler_failures = 1;
  m.dead_lettered = 1;
  m.redis_errors = 2;
  m.reconnects = 1;
  m.replica_shortfalls = 3;
  m.lateness.Record(absl::Milliseconds(3));
  m.lateness.Record(absl::Milliseconds(250));
  return m;
}

TEST(DurablePrometheusTest, DurableMetricsExactly) {
  PrometheusOptions options;
  options.prefix = "billing";
  options.lateness_buckets = {absl::Milliseconds(100)};
  const absl::StatusOr<std::string> text =
      PrometheusText(SmallDurableMetrics(), {{"keyspace", "cards"}}, options);
  ASSERT_TRUE(text.ok()) << text.status();
  // 100 ms rises to the top of its fine bucket, 100663295 ns.
  EXPECT_EQ(
      *text,
      R"(# HELP billing_durable_scheduled_total Timers Schedule*() accepted; ScheduleMany() counts each.
# TYPE billing_durable_scheduled_total counter
billing_durable_scheduled_total{keyspace="cards"} 5
# HELP billing_durable_delivered_total Handler calls started.
# TYPE billing_durable_delivered_total counter
billing_durable_delivered_total{keyspace="cards"} 4
# HELP billing_durable_acknowledged_total Acknowledgements Redis applied: the handler returned OK while this process held the timer.
# TYPE billing_durable_acknowledged_total counter
billing_durable_acknowledged_total{keyspace="cards"} 3
# HELP billing_durable_redelivered_total Handler calls of a later attempt than the first.
# TYPE billing_durable_redelivered_total counter
billing_durable_redelivered_total{keyspace="cards"} 1
# HELP billing_durable_handler_failures_total Handler calls that returned an error or threw.
# TYPE billing_durable_handler_failures_total counter
billing_durable_handler_failures_total{keyspace="cards"} 1
# HELP billing_durable_dead_lettered_total Timers this process moved to the dead-letter set, out of attempts (max_attempts).
# TYPE billing_durable_dead_lettered_total counter
billing_durable_dead_lettered_total{keyspace="cards"} 1
# HELP billing_durable_redis_errors_total Failed round trips to Redis and error replies.
# TYPE billing_durable_redis_errors_total counter
billing_durable_redis_errors_total{keyspace="cards"} 2
# HELP billing_durable_reconnects_total Connections to Redis made again after a failure.
# TYPE billing_durable_reconnects_total counter
billing_durable_reconnects_total{keyspace="cards"} 1
# HELP billing_durable_replica_shortfalls_total Delivery round trips whose writes fewer than min_replicas_acked replicas confirmed; a failover may deliver those timers again.
# TYPE billing_durable_replica_shortfalls_total counter
billing_durable_replica_shortfalls_total{keyspace="cards"} 3
# HELP billing_durable_lateness_seconds Lateness of each delivery: its start minus when it was due, on Redis's clock.
# TYPE billing_durable_lateness_seconds histogram
billing_durable_lateness_seconds_bucket{keyspace="cards",le="0.100663295"} 1
billing_durable_lateness_seconds_bucket{keyspace="cards",le="+Inf"} 2
billing_durable_lateness_seconds_sum{keyspace="cards"} 0.253
billing_durable_lateness_seconds_count{keyspace="cards"} 2
)");
}

TEST(DurablePrometheusTest, SharesAScrapeWithATimer) {
  auto scrape = PrometheusExposition::Create().value();
  ASSERT_TRUE(AddMetrics(scrape, TimerMetrics{}, {{"timer", "main"}}).ok());
  ASSERT_TRUE(
      AddMetrics(scrape, SmallDurableMetrics(), {{"keyspace", "a"}}).ok());
  ASSERT_TRUE(AddMetrics(scrape, DurableMetrics{}, {{"keyspace", "b"}}).ok());
  EXPECT_EQ(AddMetrics(scrape, DurableMetrics{}, {{"keyspace", "b"}}).code(),
            absl::StatusCode::kAlreadyExists);
  const std::string text = scrape.ToString();
  EXPECT_NE(text.find("# TYPE tickwheel_durable_delivered_total counter\n"
                      "tickwheel_durable_delivered_total{keyspace=\"a\"} 4\n"
                      "tickwheel_durable_delivered_total{keyspace=\"b\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tickwheel_timer_expired_total{timer=\"main\"} 0\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tickwheel::durable
