#!/usr/bin/env bash
# examples/run_example_test.sh
# -----------------------------------------------------------------------------
# Runs one example program (the first argument, a runfiles path) and passes
# when it exits with status 0. Each example checks its own outcome (every
# task ran exactly once, none early, every answer as expected) and exits
# non-zero when a check fails; its output is printed either way, so that a
# failure shows what the program saw.
set -euo pipefail

program="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}/output.txt"
set +e
"$program" > "$out" 2>&1
status=$?
set -e
cat "$out"
if [[ $status -ne 0 ]]; then
  echo "FAIL: $program exited with status $status" >&2
  exit 1
fi
