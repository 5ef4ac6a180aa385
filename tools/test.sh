#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script), stage by
# stage; the wall time of each is printed at the end:
#   setup      install what is missing (tools/setup.sh); prune the shared
#              build caches (tools/cache.sh)
#   checks     the include rules (tools/check_includes.sh), the format
#              (tools/check_format.sh), the names the documents give
#              (tools/check_docs.sh); beside the plain build, the compile
#              errors a user sees (tools/check_diagnostics.sh) and, in the
#              full suite, the API reference with Doxygen, warnings fatal
#              (tools/docs_reference.sh)
#   plain      build everything, benchmarks and examples included; run every
#              test
#   sanitizers two builds side by side, each in a Bazel server of its own:
#              asan+ubsan, every test but the benchmarks' smoke tests, under
#              AddressSanitizer (with LeakSanitizer) and
#              UndefinedBehaviorSanitizer in one build (--config=asan_ubsan:
#              the two find what each finds alone, for one build's price);
#              any report fails its test; and tsan, every test that starts a
#              second thread, under ThreadSanitizer (a test tagged
#              "single_threaded" has no data race to find)
#   interleave the concurrency tests again with the interleaving points on
#              (base/interleave.h), in the ASan+UBSan and the TSan builds
#              (no rebuild: the points are a run-time switch there)
#   thread-safety  clang's -Wthread-safety over the annotations
#   consumer   the consumer workspace that depends on //timer (built beside
#              the thread-safety check)
#   cmake+fuzz the CMake build (tools/check_cmake.sh, docs/CMAKE.md), and
#              beside it a short fixed-seed libFuzzer run (clang, ASan, UBSan)
#              of the Timer and the LocalTimer against their reference models
# The sanitizer runs leave out the benchmarks' smoke tests (tag "bench"):
# they drive the library through the same calls as the unit tests, and
# would build Boost.Asio, libuv, libevent and the bench under each
# sanitizer for nothing the unit tests do not already reach.
#
# --quick, while working: setup, checks and plain, with only the binaries the
# tests need (the benchmarks' smoke tests build the bench binaries, the rest
# of the benchmarks and the tools are left out); none of the later stages.
#
# Build outputs and deterministic test results come from the disk cache that
# every clone on this machine shares (.bazelrc, tools/cache.sh); tests tagged
# "external" (threads racing, the real clock, real processes or servers)
# always run. The closing line counts test targets that passed, served from
# the cache or run, plus the checks; the line above it says how.
#   tools/test.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *) echo "usage: tools/test.sh [--quick]" >&2; exit 2 ;;
esac

# ---- Stages and their wall times, printed at the end (also on failure). ----
stage_names=()
stage_secs=()
stage_name=""
stage_start=0
suite_start=$SECONDS
stage_cpus=()
stage_cpu_start=0
# CPU seconds (user + system) spent so far by this script's children and by
# this workspace's Bazel server with the actions it ran: on a loaded machine
# a stage's CPU says what it costs where its wall time does not.
cpu_now() {
  local tick pid f total=0
  tick=$(getconf CLK_TCK)
  for pid in $(pgrep -f "^bazel\\(${PWD##*/}\\) " 2>/dev/null) $$; do
    f=$(cut -d')' -f2- "/proc/$pid/stat" 2>/dev/null) || continue
    # fields after the name: utime stime cutime cstime are 12-15 here
    total=$((total + $(echo "$f" | awk '{print $12 + $13 + $14 + $15}')))
  done
  echo $((total / tick))
}
begin() {
  stage_name=$1
  stage_start=$SECONDS
  stage_cpu_start=$(cpu_now)
  echo "== $*"
}
end() {
  stage_names+=("$stage_name")
  stage_secs+=($((SECONDS - stage_start)))
  stage_cpus+=($(($(cpu_now) - stage_cpu_start)))
  stage_name=""
}
# Background jobs (the TSan build, the fuzzer) end with the script.
background=()
stop_background() {
  local pid
  for pid in "${background[@]}"; do kill "$pid" 2>/dev/null || true; done
}
summary() {
  local rc=$? i
  stop_background
  [[ -n $stage_name ]] && end
  echo "== stage times (wall; CPU of the stage's processes)"
  for i in "${!stage_names[@]}"; do
    printf '   %-14s %5d s  %6d s CPU\n' "${stage_names[$i]}" \
      "${stage_secs[$i]}" "${stage_cpus[$i]:-0}"
  done
  printf '   %-14s %5d s\n' total $((SECONDS - suite_start))
  if ((rc == 0)); then
    echo "counted: ${checks} checks + test targets that passed (${counted# + })," \
      "${cached} of them served from the cache"
    echo "tests: $((checks + targets)) passed, 0 failed"
  else
    echo "tests: $((checks + targets)) passed, 1 failed (stage ${stage_names[-1]:-setup}; see above)"
  fi
}
checks=0
targets=0
cached=0
counted=""
trap summary EXIT

quiet=(--noshow_progress --ui_event_filters=-info,-debug)

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

# count_tests <label for the count> <log of a bazel test that passed>
# Counts "Executed R out of N tests: N tests pass." as N passed, N - R of
# them from the cache.
count_tests() {
  local label=$1 log=$2 n r
  n=$(sed -n 's/.*: \([0-9][0-9]*\) tests\{0,1\} pass.*/\1/p' "$log" | tail -n 1)
  r=$(sed -n 's/^Executed \([0-9][0-9]*\) out of.*/\1/p' "$log" | tail -n 1)
  targets=$((targets + ${n:-0}))
  cached=$((cached + ${n:-0} - ${r:-0}))
  counted+=" + ${n:-0} ${label}"
}

# bazel_test <label for the count> <bazel test arguments...>
# Runs the tests and counts them.
bazel_test() {
  local label=$1 log
  shift
  log=$(mktemp)
  if ! bazel test "${quiet[@]}" "$@" 2>&1 | tee "$log"; then
    show_failures "$log"
    rm -f "$log"
    return 1
  fi
  count_tests "$label" "$log"
  rm -f "$log"
}

# The TSan build runs beside the ASan+UBSan one, in a Bazel server of its
# own (an output base next to this workspace's, which tools/cache.sh prunes
# with it; both share the disk cache): a sanitizer build leaves a core idle
# while its slower tests wait on Redis or on their threads, and the other
# build fills it.
tsan_base="$HOME/.cache/bazel/_bazel_$(id -un)/$(printf '%s' "$PWD" | md5sum | cut -c1-32)-tsan"
tsan_bazel() { bazel --output_base="$tsan_base" "$@"; }


# Each test says how it may run: from the cache and without TSan, or always.
check_test_tags() {
  local untagged
  untagged=$(bazel query "${quiet[@]}" 'tests(//...) except
    attr(tags, "\bsingle_threaded\b|\bexternal\b", tests(//...))')
  if [[ -n $untagged ]]; then
    echo "$untagged"
    echo "test.sh: these tests carry neither \"single_threaded\" nor" \
      "\"external\" (tests/BUILD.bazel says which to choose)"
    return 1
  fi
}

begin setup
tools/setup.sh
tools/cache.sh prune
end

begin checks "(include rules, format, names in the documents; the compile errors a user sees beside the plain build)"
tools/check_includes.sh
tools/check_format.sh
tools/check_docs.sh
checks=$((checks + 3))
end
# The compile errors a user sees (a compiler run per mistake, one core) and,
# in the full suite, the API reference with Doxygen, warnings fatal: beside
# the plain build, whose own tests leave a core idle now and then; their
# output follows the plain stage's.
slow_checks_log=$(mktemp)
(
  tools/check_diagnostics.sh
  $quick || tools/docs_reference.sh "$(mktemp -d)"
) >"$slow_checks_log" 2>&1 &
slow_checks_pid=$!
background+=("$slow_checks_pid")
finish_slow_checks() {
  local rc=0
  wait "$slow_checks_pid" || rc=$?
  cat "$slow_checks_log"
  rm -f "$slow_checks_log"
  ((rc == 0)) || { echo "test.sh: a check beside the plain build failed (above)"; exit 1; }
  checks=$((checks + 1))
  $quick || checks=$((checks + 1))
}

if $quick; then
  begin plain "(the tests and what they need)"
  check_test_tags
  bazel_test plain --build_tests_only //...
  finish_slow_checks
  end
  echo "== --quick: plain build only; skipped the sanitizers, interleaving," \
    "thread-safety annotations, consumer workspace, CMake and fuzzer," \
    "and the benchmarks beyond their smoke tests"
  exit 0
fi

# One `bazel test //...` builds every target, benchmarks and examples
# included, and runs each test as soon as its binary is built.
begin plain "(build everything, run every test)"
check_test_tags
bazel_test plain //...
finish_slow_checks
end

begin sanitizers "(asan+ubsan and tsan side by side; TSan's output follows)"
tsan_log=$(mktemp)
tsan_bazel test "${quiet[@]}" --config=tsan --build_tests_only \
  --test_tag_filters=-bench,-single_threaded //... >"$tsan_log" 2>&1 &
tsan_pid=$!
background+=("$tsan_pid")
bazel_test asan+ubsan --config=asan_ubsan --build_tests_only \
  --test_tag_filters=-bench //...
tsan_rc=0
wait "$tsan_pid" || tsan_rc=$?
echo "== tsan"
cat "$tsan_log"
if ((tsan_rc != 0)); then
  show_failures "$tsan_log"
  exit 1
fi
count_tests tsan "$tsan_log"
rm -f "$tsan_log"
end

# The tests whose threads race on shared handles, queues and lanes, and the
# check that the points are really on.
concurrency=(//tests:interleave_switch_test
             //tests:stress_test //tests:races_on_shared_handles_test
             //tests:races_with_producers_test
             //tests:idle_tracker_concurrency_test
             //tests:never_early_test //tests:timeout_claim_test
             //tests:local_timer_cancel_race_test
             //tests:local_timer_owner_cancel_test
             //tests:coro_sleep_races_test
             //tests:coro_sleep_destroy_test
             //tests:asio_context_lifetime_test)
begin interleave "(asan+ubsan and tsan builds, points on)"
bazel_test "asan+ubsan+interleave" --config=asan_ubsan --config=interleave \
  "${concurrency[@]}"
log=$(mktemp)
if ! tsan_bazel test "${quiet[@]}" --config=tsan --config=interleave \
    "${concurrency[@]}" 2>&1 | tee "$log"; then
  show_failures "$log"
  exit 1
fi
count_tests "tsan+interleave" "$log"
rm -f "$log"
end

# The consumer workspace (a Bazel server of its own) builds beside the
# thread-safety check; its output follows.
consumer_log=$(mktemp)
tools/check_consumer.sh >"$consumer_log" 2>&1 &
consumer_pid=$!
background+=("$consumer_pid")
begin thread-safety "(clang -Wthread-safety; the consumer workspace beside it)"
tools/thread_safety_check.sh
checks=$((checks + 1))
end

begin consumer "(a workspace that depends on //timer)"
consumer_rc=0
wait "$consumer_pid" || consumer_rc=$?
cat "$consumer_log"
rm -f "$consumer_log"
((consumer_rc == 0)) || exit 1
checks=$((checks + 1))
end

# The fuzzer (two racing threads) leaves most of a core to the CMake build
# beside it; its output follows the CMake check's.
begin cmake+fuzz "(side by side; fuzz: fixed seed, corpora in tests/fuzz_corpus and tests/local_timer_fuzz_corpus)"
fuzz_log=$(mktemp)
tools/fuzz.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
background+=("$fuzz_pid")
tools/check_cmake.sh
checks=$((checks + 1))
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
cat "$fuzz_log"
rm -f "$fuzz_log"
((fuzz_rc == 0)) || exit 1
checks=$((checks + 1))
end
