#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script):
#   1. install what is missing (tools/setup.sh), check the include rules
#      (tools/check_includes.sh), the format (tools/check_format.sh), the
#      compile errors a user sees (tools/check_diagnostics.sh), and that
#      every file, target, function and test the documents name exists
#      (tools/check_docs.sh);
#   2. build everything, benchmarks included;
#   3. run every test under the plain build and under ASan (with LSan), TSan
#      and UBSan; any sanitizer report fails its test;
#   4. run the concurrency tests again with interleaving points on (every
#      marked atomic step may yield or sleep: base/interleave.h), under
#      ASan and under TSan;
#   5. check the thread-safety annotations with clang's -Wthread-safety;
#   6. build and run a consumer workspace that depends on //timer;
#   7. the CMake build (tools/check_cmake.sh, docs/CMAKE.md): the drift check
#      against Bazel, ctest, the install, and its add_subdirectory,
#      FetchContent, find_package and pkg-config consumers;
#   8. a short fixed-seed libFuzzer run (clang, ASan, UBSan) of the real Timer
#      and of the LocalTimer against their reference models.
# --quick, a short check while working (CI runs everything): steps 1 and 2,
# and step 3 with the plain build only; no sanitizer builds, and none of steps
# 4 to 8 (interleaving, thread-safety annotations, consumer workspace, CMake,
# fuzzer).
#   tools/test.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *) echo "usage: tools/test.sh [--quick]" >&2; exit 2 ;;
esac
configs=(plain asan tsan ubsan)
if $quick; then configs=(plain); fi

tools/setup.sh

quiet=(--noshow_progress --ui_event_filters=-info,-debug)
start=$(date +%s)
echo "== include rules (CONTRIBUTING.md)"
tools/check_includes.sh
echo "== format (.clang-format)"
tools/check_format.sh
echo "== compile errors a user sees (timer/timer.h)"
tools/check_diagnostics.sh
echo "== names in the documents"
tools/check_docs.sh

echo "== build //... (plain)"
bazel build "${quiet[@]}" //...

# After a failed `bazel test`: the last lines of each failing test's log
# (bazel names them in "FAIL: //target (see /path/test.log)" lines), so that
# the reason is in CI's output even where that keeps only its end.
show_failures() {
  local f
  sed -n 's/^FAIL: .* (see \(.*test\.log\)).*/\1/p' "$1" | sort -u |
    while read -r f; do
      echo "== tail of ${f#*testlogs/}"
      tail -n 40 "$f" 2>/dev/null || true
    done
}

passed=4  # the include rules, the format, the diagnostics, the documents
for cfg in "${configs[@]}"; do
  flags=()
  [[ "$cfg" != plain ]] && flags=(--config="$cfg")
  echo "== test //... (${cfg})"
  log=$(mktemp)
  if ! bazel test "${quiet[@]}" "${flags[@]}" //... 2>&1 | tee "$log"; then
    show_failures "$log"
    echo "tests: 0 passed, 1 failed (config ${cfg}; see the log above)"
    exit 1
  fi
  # "Executed N out of M tests: M tests pass."
  n=$(sed -n 's/.*: \([0-9][0-9]*\) tests\{0,1\} pass.*/\1/p' "$log" | tail -n 1)
  passed=$((passed + ${n:-0}))
  rm -f "$log"
done

# The tests whose threads race on shared handles, queues and lanes.
concurrency=(//tests:stress_test //tests:races_on_shared_handles_test
             //tests:races_with_producers_test
             //tests:idle_tracker_concurrency_test
             //tests:never_early_test //tests:timeout_claim_test
             //tests:local_timer_cancel_race_test
             //tests:local_timer_owner_cancel_test
             //tests:coro_sleep_races_test)
if ! $quick; then
  for cfg in asan tsan; do
    echo "== test concurrency (${cfg}, interleave)"
    log=$(mktemp)
    if ! bazel test "${quiet[@]}" --config="$cfg" --config=interleave \
        "${concurrency[@]}" 2>&1 | tee "$log"; then
      show_failures "$log"
      echo "tests: 0 passed, 1 failed (config ${cfg} + interleave; see the log above)"
      exit 1
    fi
    n=$(sed -n 's/.*: \([0-9][0-9]*\) tests\{0,1\} pass.*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${n:-0}))
    rm -f "$log"
  done

  echo "== thread-safety annotations (clang -Wthread-safety)"
  tools/thread_safety_check.sh
  passed=$((passed + 1))

  echo "== consumer workspace (local_repository)"
  tools/check_consumer.sh
  passed=$((passed + 1))

  echo "== cmake"
  tools/check_cmake.sh
  passed=$((passed + 1))

  echo "== fuzz (fixed seed, corpora in tests/fuzz_corpus and tests/local_timer_fuzz_corpus)"
  tools/fuzz.sh
  passed=$((passed + 1))
fi

if $quick; then
  echo "== done in $(( $(date +%s) - start )) s (--quick: plain build only;" \
    "skipped the sanitizers, interleaving, thread-safety annotations," \
    "consumer workspace, CMake and fuzzer)"
else
  echo "== done in $(( $(date +%s) - start )) s (configs: ${configs[*]})"
fi
echo "tests: ${passed} passed, 0 failed"
