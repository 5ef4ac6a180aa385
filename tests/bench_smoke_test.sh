#!/usr/bin/env bash
# tests/bench_smoke_test.sh
# -----------------------------------------------------------------------------
# Smoke run of //tools/bench:bench with tiny sizes, so the benchmark cannot
# rot: every workload (W1..W9) on every implementation (tickwheel, Boost.Asio,
# heap), one repetition, then checks that the program's own correctness checks
# passed (exit status 0: no early fire, stop() returned what it should,
# pending 0 after cancelling, every task ran), that the table, the target
# lines (issues #3 and #6), the JSON file and the SVG picture are all there,
# and that flag errors are reported. Then the lab's pool-reuse check
# (//tools/bench/lab:pool_reuse) with a tiny N. It never asserts on a
# duration or a rate: the sizes are far too small to measure anything, and it
# runs under ASan, TSan and UBSan too.
set -euo pipefail

bench="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/bench"
out="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout ---" >&2; cat "$out/stdout.txt" >&2 || true
  echo "--- stderr ---" >&2; tail -n 40 "$out/stderr.txt" >&2 || true
  exit 1
}

# Flags: --help succeeds, an unknown flag and a bad value exit with 2.
"$bench" --help > "$out/help.txt" || fail "--help failed"
grep -q -- "--w3_k" "$out/help.txt" || fail "--help does not list --w3_k"
set +e
"$bench" --no_such_flag=1 > /dev/null 2>&1; status=$?
[[ $status -eq 2 ]] || fail "unknown flag: exit status $status, expected 2"
"$bench" --only=W0 > /dev/null 2>&1; status=$?
[[ $status -eq 2 ]] || fail "--only=W0: exit status $status, expected 2"
set -e

# The tiny run.
set +e
"$bench" --reps=1 --n=3000 --tick_ms=10 \
  --w3_k=300 --w3_tick_ms=1 --w3_min_ms=1 --w3_max_ms=40 \
  --w5_idle_s=0.2 --w6_window_ms=20 --w6_lead_ms=300 \
  --w7_depths=100,3000 --w7_m=2000 --w8_lead_ms=200 --w8_delay_ms=20 \
  --w9_settle_s=0.1 --w9_idle_s=0.2 --prime_mb=16 \
  --json="$out/bench.json" --svg="$out/w3.svg" \
  > "$out/stdout.txt" 2> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "bench exited with status $status"

grep -q "Correctness checks: all passed" "$out/stdout.txt" || fail "checks did not pass"
grep -q "^memory: .*16 MiB primed before each cell" "$out/stdout.txt" \
  || fail "the header does not give the memory environment and priming"
for row in "W1 schedule, P=1" "W1 schedule, P=2" "W2 schedule+cancel, P=2" \
           "W2 pending after 3 ticks, P=1" "W3 lateness p99" "W3 early fires" \
           "W4 memory per pending timeout" "W5 idle wake-ups" "W6 expiries per worker CPU second" \
           "W1 aggregate throughput, P=2" "W1 throughput P=2 / P=1" \
           "W1 timer's own threads, P=2, CPU" \
           "W7 schedule, D=3000 pending" "W7 schedule, D=3000 / D=100" \
           "W8 same deadline: last run - deadline" "W8 same delay: lateness max" \
           "W8 same deadline, counted: last run - deadline" \
           "W9 idle CPU, N pending"; do
  grep -q "^$row " "$out/stdout.txt" || fail "table row '$row' missing"
done
grep -q "tw/asio" "$out/stdout.txt" || fail "ratio column missing"
grep -q "W6 expiry rate  *>= 5 M/s" "$out/stdout.txt" || fail "target lines missing"
grep -q "Targets for tickwheel (issue #6)" "$out/stdout.txt" || fail "issue #6 targets missing"
for t in "T1 schedule, deep" "T1 depth scaling" "T2 schedule+cancel" "T3 memory" \
         "T4 idle, 1 pending" "T4 idle, N pending" "T5 burst accuracy" "T6 mass expiry" \
         "T7 two producers"; do
  grep -qF -e "  MET     $t " -e "  MISSED  $t " "$out/stdout.txt" \
    || fail "issue #6 target '$t' missing or not measured"
done
# One progress line per run: 9 workloads, W1, W2 (P=1,2) and W7 (two depths)
# twice each, W8 (same deadline, same deadline counted, same delay) three
# times, 3 models.
runs=$(grep -c '^\[' "$out/stderr.txt" || true)
[[ $runs -eq 42 ]] || fail "expected 42 progress lines, got $runs"

[[ -s "$out/bench.json" ]] || fail "no JSON file"
for key in '"run"' '"metrics"' '"targets"' '"w3_lateness_us"' '"failures": [' \
           '"W1.ns_per_op.P1"' '"tickwheel"' '"asio"' '"heap"' '"issue": 6' \
           '"W7.ns_per_op.D3000"' '"W8.same_deadline.last_run_late_ms"' \
           '"W8.same_deadline_counted.last_run_late_ms"' \
           '"W9.cpu_percent_of_core"' '"W1.throughput_scaling.P2"'; do
  grep -qF "$key" "$out/bench.json" || fail "JSON lacks $key"
done
# A JSON syntax check when python3 is there (it is on Debian CI images).
if command -v python3 > /dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/bench.json" \
    || fail "JSON does not parse"
fi

# By default every run is a child process (tools/bench/isolation.h); the
# in-process path must work too.
set +e
"$bench" --isolate=0 --reps=1 --only=W2,W3 --n=2000 --tick_ms=10 \
  --w3_k=100 --w3_min_ms=1 --w3_max_ms=20 > "$out/inprocess.txt" 2>> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "--isolate=0 run exited with status $status"
grep -q "Correctness checks: all passed" "$out/inprocess.txt" || fail "--isolate=0 checks"

head -c 5 "$out/w3.svg" | grep -q "<svg" || fail "SVG does not start with <svg"
lines=$(grep -c "<polyline" "$out/w3.svg" || true)
[[ $lines -eq 6 ]] || fail "expected 6 curves (3 models x 2 panels), got $lines"
tail -n 1 "$out/w3.svg" | grep -q "</svg>" || fail "SVG not closed"

# The lab's pool-reuse check, tiny: every round runs and reports.
pool_reuse="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/lab/pool_reuse"
"$pool_reuse" 2000 2 > "$out/pool_reuse.txt" 2>> "$out/stderr.txt" \
  || fail "pool_reuse exited with status $?"
grep -q "^round 2: .* per newTimeout (2000 returned by stop)" "$out/pool_reuse.txt" \
  || fail "pool_reuse output: $(cat "$out/pool_reuse.txt")"

echo "PASS"
