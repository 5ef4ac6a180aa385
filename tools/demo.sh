#!/usr/bin/env bash
# Installs what is missing (tools/setup.sh), then builds and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec bazel run --noshow_progress --ui_event_filters=-info //tools:demo
