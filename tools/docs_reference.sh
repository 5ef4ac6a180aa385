#!/usr/bin/env bash
# The API reference: Doxygen over the public headers (timer/*.h, timer/idle/,
# durable/durable_timer.h, durable/prometheus.h; not timer/internal/), with
# every warning fatal. Output: build/docs/html/index.html (or the folder
# given). tools/test.sh runs it in its checks stage.
#
# The headers document in plain // comments: tools/doxygen_filter.py hands
# each comment block to Doxygen as it is written (verbatim), the file's
# opening comment as the file's page, so the reference reads as the headers
# do, and a header needs no Doxygen markup.
#   tools/docs_reference.sh [output-folder]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-$root/build/docs}
if ! command -v doxygen >/dev/null; then
  echo "docs_reference: doxygen is missing (tools/setup.sh installs it)" >&2
  exit 1
fi
version=$(sed -n 's/^#define TICKWHEEL_VERSION "\(.*\)"$/\1/p' timer/timer.h)
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Doxyfile's settings, then what depends on this checkout.
if ! { cat tools/Doxyfile
  echo "PROJECT_NUMBER = $version"
  echo "OUTPUT_DIRECTORY = $out"
  echo "INPUT = $root/timer $root/durable/durable_timer.h $root/durable/prometheus.h"
  echo "INPUT_FILTER = \"python3 $root/tools/doxygen_filter.py\""
  echo "STRIP_FROM_PATH = $root"
  echo "STRIP_FROM_INC_PATH = $root"
} | doxygen - >"$log" 2>&1; then
  cat "$log" >&2
  echo "docs_reference: Doxygen failed (warnings are errors)" >&2
  exit 1
fi
if [[ -s $log ]]; then cat "$log" >&2; fi
echo "docs_reference: OK ($out/html/index.html, tickwheel $version)"
