// durable/prometheus.h
// -----------------------------------------------------------------------------
// A DurableTimer's metrics in the Prometheus text exposition format: the
// DurableMetrics overloads of AddMetrics() and PrometheusText() of
// timer/prometheus.h, which says how a scrape is put together, how the
// lateness histogram is bucketed, and what the errors are. Here because
// durable/ is a client of the timer's public API, never the other way round.
//
// Example (a DurableTimer and the Timer of the same process in one scrape):
//
//   auto scrape = tickwheel::PrometheusExposition::Create().value();
//   absl::Status s = AddMetrics(scrape, timer->metrics(), {{"timer", "main"}});
//   s.Update(AddMetrics(scrape, durable->metrics(), {{"keyspace",
//   "billing"}})); if (!s.ok()) return s; std::string body = scrape.ToString();
//
// The families, after the prefix ("tickwheel_" by default), all counting
// since Connect():
//   durable_scheduled_total, durable_delivered_total,
//   durable_acknowledged_total, durable_redelivered_total,
//   durable_handler_failures_total, durable_dead_lettered_total,
//   durable_redis_errors_total, durable_reconnects_total,
//   durable_replica_shortfalls_total (counters), durable_lateness_seconds
//   (histogram: delivery start - when it was due, on Redis's clock as this
//   process estimates it).
//
// Thread-safety and cost as timer/prometheus.h: thread-safe functions over
// a snapshot (DurableTimer::metrics(), any thread).

#ifndef TICKWHEEL_DURABLE_PROMETHEUS_H_
#define TICKWHEEL_DURABLE_PROMETHEUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/timer/prometheus.h"

namespace tickwheel {

// Adds every metric of a DurableTimer's snapshot under `labels`. Errors and
// cost as PrometheusExposition::Add(); on error nothing is added.
absl::Status AddMetrics(PrometheusExposition& exposition,
                        const durable::DurableMetrics& metrics,
                        const PrometheusLabels& labels);

// One snapshot as a whole exposition. Errors as PrometheusExposition's.
absl::StatusOr<std::string> PrometheusText(
    const durable::DurableMetrics& metrics, const PrometheusLabels& labels = {},
    const PrometheusOptions& options = {});

}  // namespace tickwheel

#endif  // TICKWHEEL_DURABLE_PROMETHEUS_H_
