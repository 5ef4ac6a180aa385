#!/usr/bin/env bash
# Checks the layers of CONTRIBUTING.md ("Layers"):
#   1. tickwheel's headers are included with the tickwheel/ prefix, everywhere
#      (a consumer's own timer/ or base/ headers cannot collide);
#   2. each folder includes only the layers below it, by one table:
#        base/        base/
#        worker/      worker/ base/                 (the engine)
#        timer/*.h    timer/ base/                  (the public headers)
#        timer/*.cc   timer/ timer/idle/ worker/ base/  (the facade's code)
#        timer/idle/  timer/ timer/idle/ base/      (a client of the API)
#        durable/     timer/ durable/ base/         (a client of the API)
#      where timer/ means the public headers, timer/*.h and timer/internal/;
#   3. what a user's translation unit sees: every public header, compiled on
#      its own, reaches no engine header and none of the idle tracker's or
#      the durable timers' parts (durable/'s public headers are
#      durable_timer.h and prometheus.h) (checked on the preprocessor's list of headers, so an indirect
#      include counts too).
# Exits non-zero and names each violation.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
violation() {
  echo "include rule: $*"
  fail=1
}

# 1. The tickwheel/ prefix, in the library, its tests, tools and examples.
#    tests/include_paths_test.cc checks on purpose that the repository-relative
#    paths still work inside a Bazel workspace; the consumer examples have an
#    application header of their own under timer/.
while IFS=: read -r file line text; do
  case "$file" in
    tests/include_paths_test.cc|examples/consumer/*|examples/cmake_installed/*) continue ;;
  esac
  violation "$file:$line: include tickwheel's headers as \"tickwheel/...\": $text"
done < <(grep -rnE '^#include "(timer|worker|base|durable)/' \
           timer worker base tests tools examples $(ls -d durable 2>/dev/null) \
           --include='*.h' --include='*.cc' || true)

# 2. The layers. allowed <file>: the folders its includes may name.
allowed() {
  case "$1" in
    base/*) echo "base" ;;
    worker/*) echo "worker base" ;;
    timer/idle/*) echo "timer timer/internal timer/idle base" ;;
    timer/internal/*|timer/*.h) echo "timer timer/internal base" ;;
    timer/*.cc) echo "timer timer/internal timer/idle worker base" ;;
    durable/*) echo "timer durable durable/testing base" ;;
  esac
}
while IFS= read -r file; do
  layers=$(allowed "$file")
  [[ -z "$layers" ]] && continue
  while IFS=: read -r line text; do
    header=$(sed -E 's/.*"tickwheel\/([^"]+)".*/\1/' <<<"$text")
    folder=$(dirname "$header")
    ok=0
    for layer in $layers; do
      [[ "$folder" == "$layer" ]] && ok=1
    done
    ((ok)) || violation "$file:$line: $(dirname "$file")/ may include only $layers: $text"
  done < <(grep -nE '^#include "tickwheel/' "$file" || true)
done < <(git ls-files 'base/*' 'worker/*' 'timer/*' 'durable/*' | grep -E '\.(h|cc)$')

# 3. What a user's translation unit sees.
cxx=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include"
ln -s "$(pwd)" "$tmp/include/tickwheel"
mapfile -t public < <(git ls-files 'timer/*.h' | grep -vE '^timer/idle/';
                      echo durable/durable_timer.h; echo durable/prometheus.h)
for header in "${public[@]}"; do
  echo "#include \"tickwheel/$header\"" >"$tmp/user.cc"
  if ! "$cxx" -std=c++20 -I"$tmp/include" -M "$tmp/user.cc" >"$tmp/deps" 2>"$tmp/err"; then
    cat "$tmp/err"
    violation "$header does not compile on its own"
    continue
  fi
  while read -r seen; do
    violation "a user's #include \"tickwheel/$header\" reaches $seen"
  done < <(tr ' \\' '\n\n' <"$tmp/deps" | grep -oE 'tickwheel/[a-z_/]+\.h$' |
             grep -E '^tickwheel/(worker|timer/idle|durable)/' |
             grep -vxE 'tickwheel/durable/(durable_timer|prometheus).h' |
             sort -u || true)
done

if ((fail)); then
  echo "check_includes: FAILED (CONTRIBUTING.md, \"Layers\")"
  exit 1
fi
echo "check_includes: OK (prefix; layers base <- worker <- timer, clients of timer; ${#public[@]} public headers seen by a user)"
