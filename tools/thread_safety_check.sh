#!/usr/bin/env bash
# tools/thread_safety_check.sh
# -----------------------------------------------------------------------------
# Checks the Abseil thread-safety annotations (ABSL_GUARDED_BY,
# ABSL_EXCLUSIVE_LOCKS_REQUIRED, ABSL_LOCKS_EXCLUDED, ...) with clang's
# -Wthread-safety, so that they are checked rather than decorative. gcc, which
# builds everything else, ignores them.
#
# Every .cc in timer/, worker/, base/ and durable/ (and the echo server's
# tools/echo_server_lib.cc and tools/line_logger.cc) is compiled
# with -fsyntax-only: no objects, no Bazel, a few seconds per file, files in
# parallel. Any warning fails the check (-Werror). The locks must be
# capabilities clang knows, i.e. tickwheel::internal::Mutex (base/mutex.h)
# or another ABSL_LOCKABLE type, never a bare std::mutex: an annotation naming
# one is itself a -Wthread-safety-attributes warning here.
#
# -Wthread-safety-beta adds the lock-order checks (ABSL_ACQUIRED_BEFORE).
#
# Usage: tools/thread_safety_check.sh   (from anywhere; needs clang++ 14,
#        which tools/setup.sh installs; CLANGXX=... picks another binary)
# Prints one line per file, the diagnostics of any that fail, and a summary.
# Exit status: 0 when every file is clean, 1 otherwise, 2 without clang.

set -uo pipefail

cd "$(dirname "$0")/.." || exit 2

CLANGXX="${CLANGXX:-}"
if [[ -z "${CLANGXX}" ]]; then
  for c in clang++ clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then
      CLANGXX="$c"
      break
    fi
  done
fi
if [[ -z "${CLANGXX}" ]]; then
  echo "thread_safety_check: clang++ not found; run tools/setup.sh" >&2
  exit 2
fi

OUT="$(mktemp -d)"
trap 'rm -rf "${OUT}"' EXIT
# Headers are included as "tickwheel/<folder>/<name>.h": a tickwheel/ link to
# the checkout stands in for Bazel's include_prefix.
mkdir -p "${OUT}/include"
ln -s "$(pwd)" "${OUT}/include/tickwheel"

FLAGS=(
  -std=c++20
  -fsyntax-only
  -Wthread-safety
  -Wthread-safety-reference
  -Wthread-safety-beta
  -Werror
  -I.
  -I"${OUT}/include"
)

FILES=(timer/*.cc timer/idle/*.cc worker/*.cc base/*.cc durable/*.cc
       tools/echo_server_lib.cc tools/line_logger.cc)

# One job per file, at most `nproc` at a time; each leaves its diagnostics in
# $OUT/<n>.log and its status in $OUT/<n>.rc, printed in order below.
JOBS="$(nproc 2>/dev/null || echo 2)"
for i in "${!FILES[@]}"; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do
    wait -n
  done
  (
    "${CLANGXX}" "${FLAGS[@]}" "${FILES[$i]}" >"${OUT}/$i.log" 2>&1
    echo $? >"${OUT}/$i.rc"
  ) &
done
wait

failed=0
for i in "${!FILES[@]}"; do
  if [[ "$(cat "${OUT}/$i.rc")" == 0 ]]; then
    echo "ok    ${FILES[$i]}"
  else
    echo "FAIL  ${FILES[$i]}"
    sed 's/^/      /' "${OUT}/$i.log"
    failed=$((failed + 1))
  fi
done

version="$("${CLANGXX}" --version | head -n 1)"
echo "thread-safety: ${#FILES[@]} files, ${failed} failed (${version}; ${FLAGS[*]})"
(( failed == 0 ))
