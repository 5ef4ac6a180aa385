#!/usr/bin/env bash
# Durable timers surviving a crash: installs what is missing (tools/setup.sh:
# redis-server, libhiredis-dev and the rest), builds and runs
# //tools:durable_demo. It starts its own redis-server on a free port in a
# temporary folder and two worker processes, kills one with SIGKILL while it
# holds timers, shows the other delivering them, and stops everything it
# started by pid. The system's Redis service (port 6379) is never used.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec bazel run --noshow_progress --ui_event_filters=-info //tools:durable_demo
