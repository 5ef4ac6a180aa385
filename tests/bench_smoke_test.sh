#!/usr/bin/env bash
# tests/bench_smoke_test.sh
# -----------------------------------------------------------------------------
# Smoke run of //tools/bench:bench with tiny sizes, so that the benchmark
# cannot rot: every workload on every timer (tickwheel, Boost.Asio, heap,
# libuv, libevent, and Netty's HashedWheelTimer in a JVM; the Asio coroutine
# workload on tickwheel and standalone Asio only; the owner-thread workloads
# on LocalTimer, libuv and libevent, and on Timer in their producer variant),
# one repetition, each in its own child process; then checks that the
# program's correctness checks passed (exit status 0: no early run, stop()
# returned what it should, nothing pending after cancelling, every task ran),
# that every table row, every goal line, the JSON keys and the Markdown table
# are there, that flag errors exit with 2, that the in-process path and the
# lab mode (--prime_mb) work, that the spread goal is judged over two
# repetitions, that a missing Netty jar leaves its cells empty with a note
# rather than failing, and that the lab's pool-reuse check runs. Netty needs
# java, javac and Debian's libnetty-java, which tools/setup.sh installs. It
# never asserts on a duration or a rate: the sizes are far too small to
# measure anything, and it runs under ASan, TSan and UBSan too.
set -euo pipefail

bench="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/bench"
pool_reuse="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/bench/lab/pool_reuse"
out="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout ---" >&2; cat "$out/stdout.txt" >&2 || true
  echo "--- stderr ---" >&2; tail -n 40 "$out/stderr.txt" >&2 || true
  exit 1
}

workloads=(schedule schedule_cancel schedule_depth memory release lateness idle mass_expiry burst
           coro_deadline coro_deadline_local owner_schedule_cancel owner_mass_expiry)

# Flags: --help lists every workload and labels the lab flag; an unknown
# flag, a bad value and an unknown workload exit with 2.
"$bench" --help > "$out/help.txt" || fail "--help failed"
for w in "${workloads[@]}"; do
  grep -q "^  $w " "$out/help.txt" || fail "--help does not list workload $w"
done
grep -q -- "--prime_mb .*LAB MODE" "$out/help.txt" || fail "--help does not label --prime_mb as lab mode"
for bad in --no_such_flag=1 --reps=0 --only=no_such_workload --impls=boost --quick=2; do
  set +e
  "$bench" "$bad" > /dev/null 2>&1; status=$?
  set -e
  [[ $status -eq 2 ]] || fail "$bad: exit status $status, expected 2"
done

tiny=(--quick=1 --reps=1 --warmup=100)

# The tiny run, defaults otherwise: child processes, no priming.
set +e
"$bench" "${tiny[@]}" --json="$out/bench.json" --markdown="$out/bench.md" \
  > "$out/stdout.txt" 2> "$out/stderr.txt"
status=$?
set -e
[[ $status -eq 0 ]] || fail "bench exited with status $status"
grep -q "Correctness checks: all passed" "$out/stdout.txt" || fail "checks did not pass"
grep -q "^memory: THP" "$out/stdout.txt" || fail "the header lacks the memory environment"
if grep -q "memory primed" "$out/stdout.txt"; then fail "primed without --prime_mb"; fi

rows=("schedule, 1 producer: ns per call" "schedule, 2 producers: ns per call"
      "schedule, 1 producer: caller page faults per 1M calls"
      "schedule, 1 producer: caller CPU per call" "schedule, 2 producers: timer threads' CPU per call"
      "schedule, 2 producers: throughput" "schedule, 2 producers / 1 producer: throughput"
      "schedule_cancel, 1 producer: ns per schedule+cancel" "schedule_cancel, 2 producers: caller CPU per pair"
      "schedule_cancel, 2 producers: RSS held afterwards"
      "schedule_depth, 100 pending: ns per call" "schedule_depth, 3k pending: ns per call"
      "schedule_depth, 3k pending / 100 pending: ns per call" "memory: bytes per pending timeout"
      "release: RSS above baseline, N pending" "release: RSS above baseline, later"
      "lateness, default slack: p50" "lateness, default slack: p99" "lateness, slack 0: p50"
      "lateness, slack 0: p99" "lateness, slack 0: max" "lateness, slack 0: early fires"
      "idle, 1 pending: CPU" "idle, 3k pending: wake-ups per second"
      "mass_expiry: expiries per worker CPU second" "mass_expiry: expiries per wall second"
      "mass_expiry: last deadline to last run" "burst, same deadline: lateness max"
      "burst, same delay: lateness p99" "coro_deadline: ns per request"
      "coro_deadline: io thread CPU per request" "coro_deadline_local: ns per request"
      "coro_deadline_local: io thread CPU per request"
      "owner_schedule_cancel, owner thread: ns per schedule+cancel"
      "owner_schedule_cancel, Timer, one producer: ns per schedule+cancel"
      "owner_schedule_cancel, Timer, one producer / owner thread: ns per schedule+cancel"
      "owner_schedule_cancel, owner thread: thread CPU per pair"
      "owner_mass_expiry, owner thread: deadline to last run"
      "owner_mass_expiry, Timer, one producer: expiries per second")
for row in "${rows[@]}"; do
  grep -qF -- "$row  " "$out/stdout.txt" || fail "table row '$row' missing"
done
grep -qE "tickwheel  +asio  +heap  +libuv  +libevent  +netty  +tw/asio  +tw/heap  +tw/libuv  +tw/libevent  +tw/netty$" \
  "$out/stdout.txt" || fail "timer or ratio columns missing"
if grep -q "netty not run" "$out/stdout.txt"; then fail "netty did not run (tools/setup.sh installs it)"; fi
# Netty runs the workloads of the timer concept: its cells are filled.
grep -qE "^schedule, 1 producer: ns per call +ns +lower( +[0-9.]+){6} " "$out/stdout.txt" \
  || fail "schedule has no netty cell"
grep -qE "^burst, same delay: lateness max +ms +lower( +[0-9.]+){6} " "$out/stdout.txt" \
  || fail "burst has no netty cell"
# The owner-thread rows have LocalTimer, libuv and libevent cells, and no
# asio or heap cell.
grep -qE "^owner_schedule_cancel, owner thread: ns per schedule\+cancel +ns +lower +[0-9.]+ +- +- +[0-9.]+ +[0-9.]+ " \
  "$out/stdout.txt" || fail "owner_schedule_cancel cells"
grep -q "^Goals for tickwheel" "$out/stdout.txt" || fail "goals missing"
goals=$(grep -cE "^  (MET   |MISSED|n/a   )  " "$out/stdout.txt" || true)
[[ $goals -eq 35 ]] || fail "expected 35 goal lines, got $goals"
grep -qE "^  (MET   |MISSED)  schedule, 1 producer: netty / tickwheel ns per call >= 1x" \
  "$out/stdout.txt" || fail "the goal against Netty was not judged"
grep -qE "^  n/a     schedule, 1 producer: slowest / fastest process ns per call <= 1.5x" \
  "$out/stdout.txt" || fail "the spread goal was judged on one repetition"
grep -qE "^  (MET   |MISSED)  owner_mass_expiry: libevent / tickwheel expiries per second <= 1x" \
  "$out/stdout.txt" || fail "the owner-thread goals against libevent were not judged"
grep -qE "^  (MET   |MISSED)  owner_schedule_cancel: Timer / LocalTimer ns per pair >= 2.5x" \
  "$out/stdout.txt" || fail "the Timer / LocalTimer goal was not judged"
grep -qE "^  (MET   |MISSED)  lateness, slack 0: libevent / tickwheel p50 >= 1x" \
  "$out/stdout.txt" || fail "the slack-0 goal against libevent was not judged"
# The libuv reference row of owner_schedule_cancel: a libuv cell only.
grep -qE "^owner_schedule_cancel, libuv, clock read per start: ns per schedule\+cancel +ns +lower +- +- +- +[0-9.]+ +- " \
  "$out/stdout.txt" || fail "owner_schedule_cancel's libuv clock-read row"
grep -qE "^  (MET   |MISSED)  memory: bytes per pending timeout <= 56 B" "$out/stdout.txt" \
  || fail "the memory goal was not judged"
# One progress line per run: 15 workload variants on 6 timers, coro_deadline
# and coro_deadline_local on tickwheel and asio, and the 2 owner-thread workloads on 3 timers plus
# their producer variant on tickwheel and owner_schedule_cancel's clock-read
# variant on libuv.
runs=$(grep -c '^\[' "$out/stderr.txt" || true)
[[ $runs -eq 103 ]] || fail "expected 103 progress lines, got $runs"

[[ -s "$out/bench.json" ]] || fail "no JSON file"
for key in '"run": {' '"flags": {' '"metrics": [' '"goals": [' '"failures": [' '"notes": [' \
           '"memory_primed_mib": 0' '"schedule.p1.ns_per_call"' '"schedule.p2_over_p1.throughput_mps"' \
           '"schedule_cancel.p2.rss_held_mb"' '"schedule_depth.pending3000_over_pending100.ns_per_call"' \
           '"memory.bytes_per_pending"' '"release.rss_after_mb"' '"schedule.p1.faults_per_m"' \
           '"lateness.slack0.p99_us"' '"idle.pending1.wakeups_per_s"' \
           '"mass_expiry.per_worker_cpu_mps"' '"burst.same_deadline.max_ms"' \
           '"coro_deadline.ns_per_request"' '"coro_deadline_local.ns_per_request"' '"owner_schedule_cancel.owner.ns_per_pair"' \
           '"owner_schedule_cancel.producer_over_owner.ns_per_pair"' \
           '"owner_mass_expiry.producer.last_run_ms"' \
           '"tickwheel": {' '"asio": {' '"heap": {' '"libuv": {' '"libevent": {' '"netty": {' \
           '"reason": ' '"measure": "spread"'; do
  grep -qF -- "$key" "$out/bench.json" || fail "JSON lacks $key"
done
grep -qF "| metric | unit | better | tickwheel | asio | heap | libuv | libevent | netty | tw/asio |" \
  "$out/bench.md" || fail "Markdown table header: $(head -c 400 "$out/bench.md")"
grep -qE "^\| owner_mass_expiry, owner thread: expiries per second \| M/s \| higher \| [0-9.]+ \| - \| - \| [0-9.]+ \| [0-9.]+ \|" \
  "$out/bench.md" || fail "Markdown table lacks the owner-thread row"
if command -v python3 > /dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/bench.json" \
    || fail "JSON does not parse"
fi

# Everything in this one process (--isolate=0), and the lab mode, which says so.
set +e
"$bench" "${tiny[@]}" --isolate=0 --only=schedule_cancel,lateness \
  > "$out/inprocess.txt" 2>> "$out/stderr.txt"
status=$?
"$bench" "${tiny[@]}" --only=memory --impls=tickwheel --prime_mb=16 \
  > "$out/lab.txt" 2>> "$out/stderr.txt"
status_lab=$?
set -e
[[ $status -eq 0 ]] || fail "--isolate=0 run exited with status $status"
grep -q "Correctness checks: all passed" "$out/inprocess.txt" || fail "--isolate=0 checks"
[[ $status_lab -eq 0 ]] || fail "--prime_mb run exited with status $status_lab"
grep -q "^memory primed: 16 MiB .*(lab mode" "$out/lab.txt" || fail "lab mode not labelled"

# Two repetitions judge the spread goal; without its jar, netty's cells stay
# empty with a note, and nothing fails.
set +e
"$bench" "${tiny[@]}" --reps=2 --only=schedule --impls=tickwheel \
  > "$out/spread.txt" 2>> "$out/stderr.txt"
status=$?
"$bench" "${tiny[@]}" --only=memory --impls=tickwheel,netty --netty_jar=/no/such.jar \
  > "$out/nojar.txt" 2>> "$out/stderr.txt"
status_nojar=$?
set -e
[[ $status -eq 0 ]] || fail "--reps=2 run exited with status $status"
grep -qE "^  (MET   |MISSED)  schedule, 1 producer: slowest / fastest process ns per call <= 1.5x +[0-9.]+x \(tickwheel " \
  "$out/spread.txt" || fail "the spread goal was not judged over two repetitions"
[[ $status_nojar -eq 0 ]] || fail "the run without a Netty jar exited with status $status_nojar"
grep -q "netty not run: no /no/such.jar" "$out/nojar.txt" || fail "no note on the missing Netty jar"
grep -qE "^memory: bytes per pending timeout +B +lower +[0-9.]+ +- +-$" "$out/nojar.txt" \
  || fail "netty cells without a jar: $(grep '^memory:' "$out/nojar.txt")"

# The lab's pool-reuse check, tiny: every round runs and reports.
"$pool_reuse" 2000 2 > "$out/pool_reuse.txt" 2>> "$out/stderr.txt" \
  || fail "pool_reuse exited with status $?"
grep -q "^round 2: .* per newTimeout (2000 returned by stop)" "$out/pool_reuse.txt" \
  || fail "pool_reuse output: $(cat "$out/pool_reuse.txt")"

echo "PASS"
