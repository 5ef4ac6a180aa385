#!/usr/bin/env bash
# Builds the differential fuzzers with clang 14 (libFuzzer + ASan + UBSan) and
# runs them: one harness and one reference model (tests/model/fuzz_harness.h,
# tests/model/timer_model.h) drive a real Timer (//tests:timer_fuzzer) or a
# LocalTimer as an event loop drives it (//tests:local_timer_fuzzer); each
# fails on any difference from the model.
#
#   tools/fuzz.sh                 CI: a short fixed-seed run of each over its
#                                 committed corpus (tests/fuzz_corpus/,
#                                 tests/local_timer_fuzz_corpus/, left
#                                 unchanged); exits non-zero on any finding.
#   tools/fuzz.sh --runs N        the same with N executions of the Timer
#                                 fuzzer (the LocalTimer's: see below).
#   tools/fuzz.sh --explore SECS  fuzz each for SECS seconds from its corpus,
#                                 then merge what adds coverage into that
#                                 corpus (minimised with -merge=1); review and
#                                 commit the new files.
#   tools/fuzz.sh --minimize      rebuild each corpus as the smallest set of
#                                 its files that keeps its edge coverage.
#   --only timer|local            (with any of the above) one fuzzer only.
#
# A finding leaves the crashing input as crash-* / timeout-* in the working
# directory of the run (printed), with the mismatch report on stderr; replay it
# with: $FUZZER <file>. Add it to the fuzzer's corpus once fixed, so that
# //tests:timer_fuzz_regression_test or
# //tests:local_timer_fuzz_regression_test replays it in the ordinary suite.
#
# Environment:
#   TICKWHEEL_FUZZ_OUTPUT_BASE  Bazel output base for the clang build
#                               (default: $HOME/.cache/tickwheel-fuzz), kept
#                               apart so that the gcc build cache survives.
#   TICKWHEEL_FUZZ_RUNS         executions of the Timer fuzzer in CI mode
#                               (default 20000, about a minute and a half on
#                               2 cores; the corpus alone is replayed in every
#                               build by timer_fuzz_regression_test).
#   TICKWHEEL_LOCAL_FUZZ_RUNS   executions of the LocalTimer fuzzer in CI mode
#                               (default 30000, well under a minute: it has
#                               no worker thread to wait for).
#   TICKWHEEL_FUZZ_MAX_SECONDS  upper bound on the Timer fuzzer's CI run
#                               (default 150).
#   TICKWHEEL_LOCAL_FUZZ_MAX_SECONDS  the same for the LocalTimer fuzzer
#                               (default 60).
#   TICKWHEEL_FUZZ_KEEP_SERVER  1: leave the Bazel server of that output base
#                               running afterwards (default: shut it down).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

mode=ci
runs=${TICKWHEEL_FUZZ_RUNS:-20000}
local_runs=${TICKWHEEL_LOCAL_FUZZ_RUNS:-30000}
explore_secs=0
only=all
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --only)
      case "$2" in timer|local) only=$2 ;; *) echo "fuzz.sh: --only timer|local" >&2; exit 2 ;; esac
      shift 2 ;;
    --explore) mode=explore; explore_secs=$2; shift 2 ;;
    --minimize) mode=minimize; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
done

cc=$(command -v clang-14 || command -v clang || true)
if [[ -z $cc ]]; then
  echo "fuzz.sh: clang 14 not found (tools/setup.sh installs it)" >&2
  exit 1
fi

output_base=${TICKWHEEL_FUZZ_OUTPUT_BASE:-$HOME/.cache/tickwheel-fuzz}
bazel_fuzz() {
  CC=$cc bazel --output_base="$output_base" "$@"
}
cleanup() {
  if [[ ${TICKWHEEL_FUZZ_KEEP_SERVER:-0} != 1 ]]; then
    bazel_fuzz shutdown >/dev/null 2>&1 || true
  fi
  if [[ -n ${work:-} ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

targets=()
[[ $only != local ]] && targets+=(//tests:timer_fuzzer)
[[ $only != timer ]] && targets+=(//tests:local_timer_fuzzer)
echo "fuzz.sh: building ${targets[*]} with $cc (output base $output_base)"
work=$(mktemp -d "${TMPDIR:-/tmp}/tickwheel-fuzz.XXXXXX")
if ! bazel_fuzz build --config=fuzz "${targets[@]}" >"$work/build.log" 2>&1; then
  grep -v 'Cannot export local symbol' "$work/build.log" | tail -n 40 >&2
  echo "fuzz.sh: build failed" >&2
  exit 1
fi
bin="$(bazel_fuzz info --config=fuzz bazel-bin 2>/dev/null)/tests"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
common=(-max_len=256 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
        -artifact_prefix="$root/")

# Replaces the corpus with the smallest subset of the given directories that
# keeps their edge coverage. Hand-written seed_* files stay whatever their
# coverage: each pins a scenario (see the comment in the harness) that a
# planted bug in the wheel or the worker's sleep needs to show.
# merge_into_corpus <fuzzer> <corpus> <dir>...
merge_into_corpus() {
  local fuzzer=$1 corpus=$2
  shift 2
  rm -rf "$work/merged" "$work/seeds"
  mkdir -p "$work/merged" "$work/seeds"
  cp "$corpus"/seed_* "$work/seeds/" 2>/dev/null || true
  "$fuzzer" -merge=1 -use_counters=0 "$work/merged" "$@" >"$work/merge.log" 2>&1 ||
    { tail -n 20 "$work/merge.log"; exit 1; }
  rm -f "$corpus"/*
  cp "$work/merged"/* "$corpus/"
  cp "$work/seeds"/* "$corpus/" 2>/dev/null || true
}

# run_fuzzer <name> <corpus dir> <executions in CI mode> <CI time bound>
run_fuzzer() {
  local name=$1 corpus=$2 runs=$3 max_secs=$4
  local fuzzer=$bin/$name
  [[ -x $fuzzer ]] || { echo "fuzz.sh: $fuzzer not built" >&2; exit 1; }
  rm -rf "$work/corpus"
  mkdir -p "$work/corpus"
  cp "$corpus"/* "$work/corpus/" 2>/dev/null || true
  case $mode in
    ci)
      echo "fuzz.sh: $name: $runs executions, seed 1, from" \
           "$(ls "$corpus" | wc -l) corpus files"
      local start=$SECONDS rc
      # CI's time bound: on an overloaded machine the run stops early (and
      # says so) rather than holding up the pipeline.
      set +e
      "$fuzzer" "${common[@]}" -seed=1 -runs="$runs" -max_total_time="$max_secs" \
        "$work/corpus" >"$work/log" 2>&1
      rc=$?
      set -e
      if ((rc != 0)); then
        tail -n 80 "$work/log"
        echo "fuzz.sh: $name FAILED (exit $rc); the input is saved under $root" \
             "as crash-*/timeout-*/leak-*" >&2
        exit 1
      fi
      local execs ops races
      execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
      ops=$(sed -n "s/^$name: \([0-9]*\) operations executed.*/\1/p" "$work/log")
      races=$(sed -n "s/^$name: .*, \([0-9]*\) of them races/\1/p" "$work/log")
      echo "fuzz.sh: $name OK: ${execs:-?} executions (${ops:-?} operations," \
           "${races:-?} of them races between two threads) in" \
           "$((SECONDS - start)) s, no difference from the model"
      ;;
    explore)
      echo "fuzz.sh: $name: exploring for $explore_secs s"
      "$fuzzer" "${common[@]}" -max_total_time="$explore_secs" "$work/corpus" \
        2>&1 | grep -E '^#[0-9]+.*(NEW|pulse)|^Done|^stat::|ERROR|MISMATCH' || true
      merge_into_corpus "$fuzzer" "$corpus" "$corpus" "$work/corpus"
      echo "fuzz.sh: ${corpus#$root/}/ now has $(ls "$corpus" | wc -l) files" \
           "($(du -sk "$corpus" | cut -f1) KiB); review with git status"
      ;;
    minimize)
      merge_into_corpus "$fuzzer" "$corpus" "$corpus"
      echo "fuzz.sh: ${corpus#$root/}/ now has $(ls "$corpus" | wc -l) files"
      ;;
  esac
}

if [[ $only != local ]]; then
  run_fuzzer timer_fuzzer "$root/tests/fuzz_corpus" "$runs" \
    "${TICKWHEEL_FUZZ_MAX_SECONDS:-150}"
fi
if [[ $only != timer ]]; then
  run_fuzzer local_timer_fuzzer "$root/tests/local_timer_fuzz_corpus" \
    "$local_runs" "${TICKWHEEL_LOCAL_FUZZ_MAX_SECONDS:-60}"
fi
