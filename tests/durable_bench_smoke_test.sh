#!/usr/bin/env bash
# tests/durable_bench_smoke_test.sh
# -----------------------------------------------------------------------------
# Smoke run of //tools/bench:durable_bench with tiny sizes, so that the
# durable timers' benchmark cannot rot: it starts its own redis-server and
# worker processes, runs every workload, and its correctness checks must pass
# (exit status 0: every timer acknowledged, nothing left pending). Checks
# that every table row and goal line is printed, that --only runs only what
# it names, and that bad flags exit with 2. Then the same of
# //tools/bench:durable_cluster_bench on clusters of 1 and 3 masters. It never asserts on a rate or a
# duration: the sizes are far too small to measure anything, and it runs
# under ASan, TSan and UBSan too.
set -euo pipefail

bench="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/durable_bench"
out="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout ---" >&2; cat "$out/stdout.txt" >&2 || true
  echo "--- stderr ---" >&2; tail -n 40 "$out/stderr.txt" >&2 || true
  exit 1
}

for bad in --no_such_flag=1 --deliver_n=0 --appendfsync=sometimes --only=nothing; do
  set +e
  "$bench" "$bad" > /dev/null 2>&1; status=$?
  set -e
  [[ $status -eq 2 ]] || fail "$bad: exit status $status, expected 2"
done

set +e
"$bench" --quick=1 > "$out/stdout.txt" 2> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "durable_bench exited with status $status"
grep -q "Correctness checks: all passed" "$out/stdout.txt" || fail "checks did not pass"
grep -q "^durable_bench: redis-server .* appendfsync always" "$out/stdout.txt" \
  || fail "the header lacks the server's configuration"
rows=("redis-benchmark ZADD, 50 clients, pipeline 16 (ceiling)" "Schedule(), 1 thread"
      "Schedule(), 4 threads" "ScheduleMany(), batches of 1000" "deliveries, 1 process"
      "deliveries, 3 processes" "CPU per delivery: Redis / worker"
      "CPU per delivery: Redis / workers" "lateness p50 / p99 / max, scheduled ahead"
      "lateness p50 / p99 / max, short notice, hints"
      "lateness p50 / p99 / max, short notice, hints off")
for row in "${rows[@]}"; do
  grep -qF -- "$row  " "$out/stdout.txt" || fail "table row '$row' missing"
done
goals=$(grep -cE "^  (MET   |MISSED)  " "$out/stdout.txt" || true)
[[ $goals -eq 5 ]] || fail "expected 5 goal lines, got $goals"

set +e
"$bench" --quick=1 --only=schedule_many --appendfsync=everysec \
  > "$out/only.txt" 2>> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "--only=schedule_many exited with status $status"
grep -q "ScheduleMany(), batches of 1000" "$out/only.txt" || fail "--only: row missing"
if grep -q "deliveries, 1 process" "$out/only.txt"; then fail "--only ran more"; fi
grep -q "appendfsync everysec" "$out/only.txt" || fail "--appendfsync not applied"

cluster_bench="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/durable_cluster_bench"
for bad in --no_such_flag=1 --masters=0 --masters=1,x --shards=2 --replicas=9; do
  set +e
  "$cluster_bench" "$bad" > /dev/null 2>&1; status=$?
  set -e
  [[ $status -eq 2 ]] || fail "durable_cluster_bench $bad: exit status $status, expected 2"
done
set +e
"$cluster_bench" --quick=1 --masters=1,3 --shards=6 --processes=2 \
  > "$out/stdout.txt" 2> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "durable_cluster_bench exited with status $status"
grep -q "Correctness checks: all passed" "$out/stdout.txt" || fail "checks did not pass"
for row in "1  " "3  " "3/1  "; do
  grep -qE -- "^$row +[0-9.]+(/s|x)" "$out/stdout.txt" || fail "table row '$row' missing"
done
goals=$(grep -cE "^  (MET   |MISSED)  " "$out/stdout.txt" || true)
[[ $goals -eq 3 ]] || fail "durable_cluster_bench: expected 3 goal lines, got $goals"

echo "PASS"
