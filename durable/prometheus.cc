#include "tickwheel/durable/prometheus.h"

#include <string>
#include <string_view>

namespace tickwheel {

absl::Status AddMetrics(PrometheusExposition& exposition,
                        const durable::DurableMetrics& metrics,
                        const PrometheusLabels& labels) {
  using Type = PrometheusMetric::Type;
  const auto name = [&](std::string_view n) {
    return exposition.MetricName(n);
  };
  const auto count = [](int64_t v) { return static_cast<double>(v); };
  return exposition.Add(
      labels,
      {
          {Type::kCounter, name("durable_scheduled_total"),
           "Timers Schedule*() accepted; ScheduleMany() counts each.",
           count(metrics.scheduled)},
          {Type::kCounter, name("durable_delivered_total"),
           "Handler calls started.", count(metrics.delivered)},
          {Type::kCounter, name("durable_acknowledged_total"),
           "Acknowledgements Redis applied: the handler returned OK while "
           "this process held the timer.",
           count(metrics.acknowledged)},
          {Type::kCounter, name("durable_redelivered_total"),
           "Handler calls of a later attempt than the first.",
           count(metrics.redelivered)},
          {Type::kCounter, name("durable_handler_failures_total"),
           "Handler calls that returned an error or threw.",
           count(metrics.handler_failures)},
          {Type::kCounter, name("durable_dead_lettered_total"),
           "Timers this process moved to the dead-letter set, out of "
           "attempts (max_attempts).",
           count(metrics.dead_lettered)},
          {Type::kCounter, name("durable_redis_errors_total"),
           "Failed round trips to Redis and error replies.",
           count(metrics.redis_errors)},
          {Type::kCounter, name("durable_reconnects_total"),
           "Connections to Redis made again after a failure.",
           count(metrics.reconnects)},
          {Type::kCounter, name("durable_replica_shortfalls_total"),
           "Delivery round trips whose writes fewer than min_replicas_acked "
           "replicas confirmed; a failover may deliver those timers again.",
           count(metrics.replica_shortfalls)},
          {Type::kHistogram, name("durable_lateness_seconds"),
           "Lateness of each delivery: its start minus when it was due, on "
           "Redis's clock.",
           0, &metrics.lateness},
      });
}

absl::StatusOr<std::string> PrometheusText(
    const durable::DurableMetrics& metrics, const PrometheusLabels& labels,
    const PrometheusOptions& options) {
  return internal::PrometheusTextOf(metrics, labels, options);
}

}  // namespace tickwheel
