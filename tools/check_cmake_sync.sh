#!/usr/bin/env bash
# Checks that the CMake build (CMakeLists.txt, tests/CMakeLists.txt) and the
# Bazel build (the primary one) build the same things:
#   1. the same library files: every source and header of Bazel's cc_library
#      targets under //timer, //worker, //base and //durable (but the test-only ones)
#      is in tickwheel::timer, tickwheel::idle_tracker, tickwheel::durable or
#      tickwheel::asio, and nothing else is (without hiredis, CMake builds no
#      tickwheel::durable, says so in the manifest, and //durable is left
#      out; likewise timer/asio.h and its service without standalone Asio);
#   2. the same tests: every Bazel test (unit tests of //tests, example
#      programs of //examples) is a ctest test of the same name or is on the
#      explicit list of Bazel-only tests, TICKWHEEL_BAZEL_ONLY_TESTS in
#      tests/CMakeLists.txt; every ctest test is a Bazel test; and every
#      name on that list is a Bazel test that CMake does not build.
# The CMake side is read from the manifest that a configuration writes
# (cmake/TickwheelManifest.cmake), i.e. from the targets and tests it made;
# the Bazel side from `bazel query`.
#
# Usage: tools/check_cmake_sync.sh [<configured CMake build dir>]
# Without a build dir it configures one in a temporary folder.
# Exits non-zero and names each difference.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

build=${1:-}
if [[ -z "$build" ]]; then
  build="$tmp/build"
  cmake -S . -B "$build" -DTICKWHEEL_BUILD_TESTS=ON >"$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log"; echo "check_cmake_sync: cmake configure failed"; exit 1; }
fi
manifest="$build/tickwheel_manifest.txt"
if [[ ! -f "$manifest" ]]; then
  echo "check_cmake_sync: no $manifest (configure with TICKWHEEL_BUILD_TESTS=ON first)"
  exit 1
fi
if ! grep -q '^test ' "$manifest"; then
  echo "check_cmake_sync: $manifest lists no tests (configure with TICKWHEEL_BUILD_TESTS=ON)"
  exit 1
fi

query() {
  bazel query --noshow_progress --ui_event_filters=-info,-debug "$1" 2>"$tmp/query.log" ||
    { cat "$tmp/query.log" >&2; echo "check_cmake_sync: bazel query failed: $1" >&2; return 1; }
}

# Bazel labels as paths: //timer/idle:idle_core.cc -> timer/idle/idle_core.cc.
# Tests as ctest names them: those of //tests by their bare name
# (//tests:cancel_test -> cancel_test), the others as <package>/<name>
# (//examples:heartbeat_test -> examples/heartbeat_test).
libs='attr(testonly, 0, kind(cc_library, //timer/... + //worker/... + //base/... + //durable/...))'
query "labels(srcs, $libs) + labels(hdrs, $libs)" |
  sed -E 's#^//([^:]*):(.*)$#\1/\2#' | sort -u >"$tmp/bazel_library"
if grep -qx 'skipped durable' "$manifest"; then
  grep -v '^durable/' "$tmp/bazel_library" >"$tmp/bazel_library.kept" || true
  mv "$tmp/bazel_library.kept" "$tmp/bazel_library"
fi
if grep -qx 'skipped asio' "$manifest"; then
  grep -vx -e 'timer/asio.h' -e 'timer/internal/asio_sleep_service.h' \
    "$tmp/bazel_library" >"$tmp/bazel_library.kept" || true
  mv "$tmp/bazel_library.kept" "$tmp/bazel_library"
fi
query 'tests(//...)' | sed -E -e 's#^//tests:##' -e 's#^//([^:]*):#\1/#' |
  sort -u >"$tmp/bazel_tests"

sed -n 's/^library //p' "$manifest" | sort -u >"$tmp/cmake_library"
sed -n 's/^test //p' "$manifest" | sort -u >"$tmp/cmake_tests"
sed -n 's/^bazel_only //p' "$manifest" | sort -u >"$tmp/bazel_only"
sort -u "$tmp/cmake_tests" "$tmp/bazel_only" >"$tmp/cmake_accounted"

fail=0
report() {  # report <file> <message>
  while read -r item; do
    echo "cmake sync: $item: $2"
    fail=1
  done <"$1"
}

comm -23 "$tmp/bazel_library" "$tmp/cmake_library" >"$tmp/d1"
report "$tmp/d1" "in a Bazel library target under //timer, //worker, //base or //durable, not in the CMake libraries (CMakeLists.txt globs)"
comm -13 "$tmp/bazel_library" "$tmp/cmake_library" >"$tmp/d2"
report "$tmp/d2" "compiled into a CMake library, but in no Bazel cc_library under //timer, //worker, //base or //durable (add it to a BUILD.bazel, or remove the file)"
comm -23 "$tmp/bazel_tests" "$tmp/cmake_accounted" >"$tmp/d3"
report "$tmp/d3" "a Bazel test that the CMake build neither builds nor lists in TICKWHEEL_BAZEL_ONLY_TESTS (tests/CMakeLists.txt)"
comm -13 "$tmp/bazel_tests" "$tmp/cmake_tests" >"$tmp/d4"
report "$tmp/d4" "a ctest test with no Bazel test of that name (add a cc_test to tests/BUILD.bazel)"
comm -13 "$tmp/bazel_tests" "$tmp/bazel_only" >"$tmp/d5"
report "$tmp/d5" "listed as Bazel-only in tests/CMakeLists.txt, but Bazel has no such test"
comm -12 "$tmp/cmake_tests" "$tmp/bazel_only" >"$tmp/d6"
report "$tmp/d6" "listed as Bazel-only in tests/CMakeLists.txt, yet built by CMake too"

if ((fail)); then
  echo "check_cmake_sync: FAILED (the CMake and Bazel builds differ; docs/CMAKE.md, \"Drift check\")"
  exit 1
fi
echo "check_cmake_sync: OK ($(wc -l <"$tmp/cmake_library") library files," \
  "$(wc -l <"$tmp/cmake_tests") tests in both builds; Bazel-only:" \
  "$(paste -sd ' ' "$tmp/bazel_only"))"
