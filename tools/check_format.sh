#!/usr/bin/env bash
# Fails when a C++ file of the project differs from what clang-format makes of
# it (.clang-format at the root: Google style, 80 columns). Every tracked .h
# and .cc file is checked, the library, tests, tools, benchmarks and examples
# alike. To fix: git ls-files '*.h' '*.cc' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is missing (tools/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.h' '*.cc')
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "$out" | grep -E '^[^ ].*(warning|error):' | head -n 20
  n=$(echo "$out" | grep -c 'warning:\|error:' || true)
  echo "check_format: ${n} places differ from .clang-format; run" \
       "git ls-files '*.h' '*.cc' | xargs clang-format -i" >&2
  exit 1
fi
echo "check_format: OK (${#files[@]} files)"
