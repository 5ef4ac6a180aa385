#!/usr/bin/env bash
# Builds and runs examples/consumer, a separate Bazel workspace that depends on
# tickwheel through local_repository, exactly as README.md describes. Proves
# that //timer is usable from outside this workspace. It shares the disk cache
# of tickwheel's own builds (.bazelrc, tools/cache.sh), so an unchanged tree
# builds nothing again.
set -euo pipefail
cd "$(dirname "$0")/../examples/consumer"
# Its own output base, so it does not disturb the main workspace's server.
out="${TICKWHEEL_CONSUMER_OUTPUT_BASE:-$HOME/.cache/tickwheel-consumer}"
bazel --output_base="$out" run --noshow_progress --ui_event_filters=-info \
  --disk_cache="$HOME/.cache/tickwheel/bazel-disk" //:consumer
bazel --output_base="$out" shutdown
