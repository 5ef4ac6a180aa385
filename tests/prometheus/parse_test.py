#!/usr/bin/python3
# tests/prometheus/parse_test.py
# -----------------------------------------------------------------------------
# The Prometheus text exposition of real timers, read by Prometheus's own
# Python parser (Debian's python3-prometheus-client,
# prometheus_client.parser.text_string_to_metric_families) and checked
# family by family:
#   1. print_metrics --durable: a Timer, a LocalTimer, an IdleTracker and a
#      DurableTimer after known work (print_metrics.cc says which); every
#      family is typed as written (the parser turns a sample it cannot place
#      into an untyped family of its own, so none may appear), has help,
#      the counters, gauges and histograms hold the values the work implies,
#      histogram buckets are cumulative up to le="+Inf" == _count, and the
#      escaped label value reads back as given;
#   2. examples/prometheus_endpoint --serve: one scrape over HTTP, as
#      Prometheus makes it; the same checks on the Timer's families.
# Also a strict reading of every line against the format's grammar, which
# the lenient parser does not enforce.
#
#   parse_test.py <print_metrics binary> <prometheus_endpoint binary>

import math
import re
import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

TIMER_LABEL = 'main "quoted" \\ slash'

TIMER_FAMILIES = {
    "tickwheel_timer_pending_timeouts": "gauge",
    "tickwheel_timer_expired": "counter",
    "tickwheel_timer_cancelled": "counter",
    "tickwheel_timer_ticks": "counter",
    "tickwheel_timer_catch_up_ticks": "counter",
    "tickwheel_timer_wakeups": "counter",
    "tickwheel_timer_worst_lateness_seconds": "gauge",
    "tickwheel_timer_lateness_seconds": "histogram",
}
IDLE_FAMILIES = {
    "tickwheel_idle_tracked": "gauge",
    "tickwheel_idle_fired": "counter",
    "tickwheel_idle_rearmed": "counter",
    "tickwheel_idle_stale_dropped": "counter",
    "tickwheel_idle_timer_ops": "counter",
    "tickwheel_idle_refreshes": "counter",
    "tickwheel_idle_active": "gauge",
    "tickwheel_idle_worst_lateness_seconds": "gauge",
    "tickwheel_idle_worst_clock_lag_seconds": "gauge",
}
DURABLE_FAMILIES = {
    "tickwheel_durable_scheduled": "counter",
    "tickwheel_durable_delivered": "counter",
    "tickwheel_durable_acknowledged": "counter",
    "tickwheel_durable_redelivered": "counter",
    "tickwheel_durable_handler_failures": "counter",
    "tickwheel_durable_dead_lettered": "counter",
    "tickwheel_durable_redis_errors": "counter",
    "tickwheel_durable_reconnects": "counter",
    "tickwheel_durable_replica_shortfalls": "counter",
    "tickwheel_durable_lateness_seconds": "histogram",
}

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
VALUE = r"(?:[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|NaN|[+-]Inf)"
SAMPLE = re.compile(rf"^({NAME})(?:\{{{LABEL}(?:,{LABEL})*\}})? {VALUE}$")
COMMENT = re.compile(rf"^# (HELP {NAME} .*|TYPE {NAME} (counter|gauge|histogram))$")

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def check_grammar(text):
    """Every line is a HELP, a TYPE or a sample; each family's TYPE comes
    once, before its samples, and its samples are together."""
    check(text.endswith("\n"), "the text ends with a line feed")
    typed = []
    current = None
    for line in text.splitlines():
        if line.startswith("#"):
            check(COMMENT.match(line) is not None, f"comment line: {line!r}")
            parts = line.split(" ", 3)
            if parts[1] == "TYPE":
                check(parts[2] not in typed, f"{parts[2]} typed twice")
                typed.append(parts[2])
                current = (parts[2], parts[3])
            continue
        m = SAMPLE.match(line)
        check(m is not None, f"sample line: {line!r}")
        if m is None or current is None:
            check(current is not None, f"sample before any TYPE: {line!r}")
            continue
        name, kind = current
        allowed = [name]
        if kind == "histogram":
            allowed = [name + s for s in ("_bucket", "_sum", "_count")]
        check(m.group(1) in allowed, f"{m.group(1)} outside its family {name}")


def families_of(text):
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for f in families.values():
        # The parser names an untyped family "unknown" (OpenMetrics' word).
        check(f.type in ("counter", "gauge", "histogram"),
              f"{f.type} family {f.name}: {f.samples}")
        check(f.documentation != "", f"{f.name} has no help")
    return families


def value(families, name, labels, sample=None):
    """The value of the sample `sample` (default: the family's own name,
    counters with _total) of family `name` with exactly `labels`."""
    family = families.get(name)
    if family is None:
        failures.append(f"no family {name}")
        return None
    if sample is None:
        sample = name + ("_total" if family.type == "counter" else "")
    for s in family.samples:
        if s.name == sample and s.labels == labels:
            return s.value
    failures.append(f"no sample {sample}{labels} in {name}")
    return None


def check_types(families, expected):
    for name, kind in expected.items():
        check(name in families, f"family {name} missing")
        if name in families:
            check(families[name].type == kind,
                  f"{name} is {families[name].type}, not {kind}")


def check_histogram(families, name, labels, count):
    family = families.get(name)
    if family is None:
        failures.append(f"no family {name}")
        return
    buckets = [s for s in family.samples
               if s.name == name + "_bucket" and
               {k: v for k, v in s.labels.items() if k != "le"} == labels]
    bounds = [float(s.labels["le"]) for s in buckets]
    counts = [s.value for s in buckets]
    check(len(buckets) >= 2, f"{name}{labels}: buckets {buckets}")
    check(bounds == sorted(bounds) and len(set(bounds)) == len(bounds),
          f"{name}{labels}: le not increasing: {bounds}")
    check(bounds and math.isinf(bounds[-1]), f"{name}{labels}: no +Inf bucket")
    check(counts == sorted(counts), f"{name}{labels}: not cumulative: {counts}")
    check(counts and counts[-1] == count,
          f"{name}{labels}: +Inf bucket {counts[-1:]} != {count}")
    check(value(families, name, labels, name + "_count") == count,
          f"{name}{labels}: _count != {count}")
    total = value(families, name, labels, name + "_sum")
    check(total is not None and total >= 0, f"{name}{labels}: _sum {total}")


def check_timer(families, labels, expired, cancelled, pending):
    check(value(families, "tickwheel_timer_expired", labels) == expired,
          f"timer {labels}: expired")
    check(value(families, "tickwheel_timer_cancelled", labels) == cancelled,
          f"timer {labels}: cancelled")
    check(value(families, "tickwheel_timer_pending_timeouts", labels) ==
          pending, f"timer {labels}: pending")
    check(value(families, "tickwheel_timer_ticks", labels) > 0,
          f"timer {labels}: ticks")
    worst = value(families, "tickwheel_timer_worst_lateness_seconds", labels)
    check(worst is not None and worst >= 0, f"timer {labels}: worst lateness")
    check_histogram(families, "tickwheel_timer_lateness_seconds", labels,
                    expired)


def check_print_metrics(binary):
    text = subprocess.run([binary, "--durable"], check=True, timeout=300,
                          stdout=subprocess.PIPE, text=True).stdout
    check_grammar(text)
    families = families_of(text)
    check_types(families, {**TIMER_FAMILIES, **IDLE_FAMILIES,
                           **DURABLE_FAMILIES})
    check(set(families) == set(TIMER_FAMILIES) | set(IDLE_FAMILIES) |
          set(DURABLE_FAMILIES), f"other families: {sorted(families)}")

    check_timer(families, {"timer": TIMER_LABEL}, 5, 2, 1)
    check_timer(families, {"timer": "loop"}, 3, 0, 1)
    conns = {"tracker": "conns"}
    check(value(families, "tickwheel_idle_fired", conns) == 2, "idle: fired")
    check(value(families, "tickwheel_idle_tracked", conns) == 1,
          "idle: tracked")
    check(value(families, "tickwheel_idle_active", conns) == 1, "idle: active")
    check(value(families, "tickwheel_timer_ticks", conns) > 0,
          "idle: its wheel's ticks")
    prom = {"keyspace": "prom"}
    for name, n in (("scheduled", 3), ("delivered", 3), ("acknowledged", 3),
                    ("redelivered", 0), ("handler_failures", 0),
                    ("dead_lettered", 0)):
        check(value(families, f"tickwheel_durable_{name}", prom) == n,
              f"durable: {name}")
    check_histogram(families, "tickwheel_durable_lateness_seconds", prom, 3)


def check_endpoint(binary):
    server = subprocess.Popen([binary, "--serve"], stdout=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        check(m is not None, f"the endpoint printed {line!r}")
        if m is None:
            return
        url = f"http://127.0.0.1:{m.group(1)}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            check(response.status == 200, f"status {response.status}")
            check(response.headers["Content-Type"].startswith(
                "text/plain; version=0.0.4"), "content type")
            text = response.read().decode("utf-8")
    finally:
        server.terminate()  # the process this test started, by its handle
        server.wait(timeout=30)
    check_grammar(text)
    families = families_of(text)
    check_types(families, TIMER_FAMILIES)
    check(set(families) == set(TIMER_FAMILIES),
          f"other families: {sorted(families)}")
    # The example serves once its three timeouts ran: one cancelled, one
    # periodic pending.
    check_timer(families, {"timer": "main"}, 3, 1, 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__ or "usage: parse_test.py <print_metrics> <endpoint>")
    check_print_metrics(sys.argv[1])
    check_endpoint(sys.argv[2])
    for f in failures:
        print("FAILED:", f)
    if failures:
        sys.exit(1)
    print("parse_test: OK (every family typed, valued and well formed)")


if __name__ == "__main__":
    main()
