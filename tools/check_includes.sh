#!/usr/bin/env bash
# Checks the include rules of CONTRIBUTING.md ("Layout and include rules"):
#   1. the library's own headers are included with the tickwheel/ prefix,
#      everywhere (a consumer's own timer/ or worker/ headers cannot collide);
#   2. worker/ (the engine) includes nothing from timer/ (the facade);
#   3. timer/idle/ (the idle tracker) includes the public headers of timer/
#      and, of the engine, only the primitives every component may use;
#   4. a user's translation unit that includes timer/timer.h,
#      timer/idle_tracker.h or durable/durable_timer.h sees none of the
#      engine's lanes, queues, pool, wheel, nodes or worker (checked on the
#      preprocessor's list of headers), and durable_timer.h none of durable/'s
#      internals;
#   5. durable/ (durable timers on Redis) is a client of the public API: it
#      includes the public headers of timer/ and nothing of worker/ or
#      timer/idle/.
# Exits non-zero and names each violation.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
violation() {
  echo "include rule: $*"
  fail=1
}

# The engine's primitives: headers with no engine state behind them.
primitives='mutex|logging|nanos|interleave|time_source|task_slot|histogram|deadline_spec'
# What a user's translation unit must not see.
hidden='lane|lane_arrays|mpsc_queue|cell_pool|wheel|timeout_node|shared_state|worker'

# 1. The tickwheel/ prefix, in the library, its tests, tools and examples
#    (tests/include_paths_test.cc checks the old paths on purpose, and the
#    consumer examples examples/consumer and examples/cmake_installed have an
#    application header of their own under timer/).
while IFS=: read -r file line text; do
  case "$file" in
    tests/include_paths_test.cc|examples/consumer/*|examples/cmake_installed/*) continue ;;
  esac
  violation "$file:$line: include tickwheel's headers as \"tickwheel/...\": $text"
done < <(grep -rnE '^#include "(timer|worker|durable)/' timer worker durable tests tools examples \
           --include='*.h' --include='*.cc' || true)

# 2. The engine never includes the facade.
while IFS=: read -r file line text; do
  violation "$file:$line: worker/ must not include timer/: $text"
done < <(grep -rnE '^#include "tickwheel/timer/' worker || true)

# 3. The idle tracker: public headers and primitives only.
while IFS=: read -r file line text; do
  header=$(sed -E 's/.*"tickwheel\/([^"]+)".*/\1/' <<<"$text")
  case "$header" in
    timer/idle/*) ;;
    timer/*/*) violation "$file:$line: timer/idle/ may include public headers only: $text" ;;
    timer/*) ;;
    worker/*)
      if ! grep -qE "^worker/($primitives)\.h$" <<<"$header"; then
        violation "$file:$line: timer/idle/ may include only the engine's primitives ($primitives): $text"
      fi ;;
  esac
done < <(grep -rnE '^#include "tickwheel/' timer/idle || true)

# 5. durable/: the public API only.
while IFS=: read -r file line text; do
  header=$(sed -E 's/.*"tickwheel\/([^"]+)".*/\1/' <<<"$text")
  case "$header" in
    durable/*) ;;
    timer/*/*) violation "$file:$line: durable/ may include only the public headers of timer/: $text" ;;
    timer/*) ;;
    *) violation "$file:$line: durable/ is a client of the public API, it may not include $header: $text" ;;
  esac
done < <(grep -rnE '^#include "tickwheel/' durable || true)

# 4. What a user's translation unit sees.
cxx=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include"
ln -s "$(pwd)" "$tmp/include/tickwheel"
for public in timer/timer.h timer/idle_tracker.h durable/durable_timer.h; do
  echo "#include \"tickwheel/$public\"" >"$tmp/user.cc"
  if ! "$cxx" -std=c++20 -I"$tmp/include" -M "$tmp/user.cc" >"$tmp/deps" 2>"$tmp/err"; then
    cat "$tmp/err"
    violation "$public does not compile on its own"
    continue
  fi
  while read -r seen; do
    violation "a user's #include \"tickwheel/$public\" reaches $seen"
  done < <(tr ' \\' '\n\n' <"$tmp/deps" | grep -oE "tickwheel/worker/($hidden)\.h$" | sort -u || true)
  while read -r seen; do
    violation "a user's #include \"tickwheel/$public\" reaches durable/'s internal $seen"
  done < <(tr ' \\' '\n\n' <"$tmp/deps" | grep -oE "tickwheel/durable/[a-z_/]+\.h$" |
             grep -v '^tickwheel/durable/durable_timer\.h$' | sort -u || true)
done

if ((fail)); then
  echo "check_includes: FAILED (rules: CONTRIBUTING.md, \"Layout and include rules\")"
  exit 1
fi
echo "check_includes: OK (prefix, engine -> facade, idle -> primitives, durable -> public API, what a user sees)"
