#!/usr/bin/env bash
# The build caches that every clone of tickwheel on this machine shares, and
# their pruning. tools/test.sh runs `tools/cache.sh prune` first.
#
#   tools/cache.sh prune   removes what no build has used for a week, then the
#                          least recently used files until the whole is under
#                          the size bound, and the Bazel output bases of
#                          tickwheel checkouts that are gone (each clone has
#                          one, keyed by its folder); at most once an hour
#   tools/cache.sh du      prints each cache's size
#   tools/cache.sh dir     prints the root folder
#
# Under $HOME/.cache/tickwheel (.bazelrc names the Bazel caches there; a
# user.bazelrc may point them elsewhere):
#   bazel-disk/   Bazel's disk cache (.bazelrc: --disk_cache): every action's
#                 outputs by content, so a fresh clone of an unchanged tree,
#                 or a config built before, compiles nothing; test results
#                 too, but for the tests tagged "external", which always run
#   bazel-repo/   Bazel's repository cache (.bazelrc: --repository_cache)
#   cmake/        tools/check_cmake.sh's build folders, one per checkout (it
#                 prunes those itself: a folder whose checkout is gone, or
#                 unused for a week)
#   ccache/       ccache's cache of the CMake builds' compiles (ccache keeps
#                 it under CCACHE_MAXSIZE, 2 GB, by itself)
# Bazel 4.2 never shrinks a disk cache by itself. A file's access time tells
# when a build last read it (ext4's relatime updates it at least daily), so
# "unused for a week" is `find -atime +7`.
#
# Environment: TICKWHEEL_CACHE_MAX_GB, the size bound of bazel-disk
# (default 20).
set -euo pipefail

root=$HOME/.cache/tickwheel
max_gb=${TICKWHEEL_CACHE_MAX_GB:-20}

prune() {
  local disk="$root/bazel-disk" stamp="$root/.pruned"
  mkdir -p "$root"
  if [[ -f $stamp && -z $(find "$stamp" -mmin +60) ]]; then return 0; fi
  touch "$stamp"
  [[ -d $disk ]] || return 0
  local before after
  before=$(du -sm "$disk" | cut -f1)
  find "$disk" -type f -atime +7 -delete
  # Still over the bound: the least recently read files go first.
  local limit=$((max_gb * 1024 * 1024))  # KiB
  if (($(du -sk "$disk" | cut -f1) > limit)); then
    find "$disk" -type f -printf '%A@ %k %p\n' | sort -n |
      awk -v over="$(($(du -sk "$disk" | cut -f1) - limit * 9 / 10))" \
        '{ if (freed < over) { print $3; freed += $2 } }' |
      xargs -r rm -f
  fi
  find "$disk" -mindepth 1 -type d -empty -delete
  after=$(du -sm "$disk" | cut -f1)
  if ((after != before)); then
    echo "cache: pruned $disk from ${before} MB to ${after} MB"
  fi
  prune_output_bases
}

# An output base records its workspace's folder in DO_NOT_BUILD_HERE, and
# holds execroot/tickwheel when the workspace is ours; one whose folder is
# gone (a CI clone, a scratch clone) and whose server has exited is removed.
prune_output_bases() {
  local base ws pid
  for base in "$HOME"/.cache/bazel/_bazel_"$(id -un)"/*/; do
    base=${base%/}
    [[ -d $base/execroot/tickwheel && -f $base/DO_NOT_BUILD_HERE ]] || continue
    ws=$(cat "$base/DO_NOT_BUILD_HERE")
    [[ -n $ws && ! -e $ws ]] || continue
    pid=$(cat "$base/server/server.pid.txt" 2>/dev/null || true)
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then continue; fi
    chmod -R u+w "$base" 2>/dev/null || true
    rm -rf "$base"
    echo "cache: removed the output base of $ws (gone)"
  done
}

case "${1:-}" in
  prune) prune ;;
  du)
    for d in "$root"/*/; do
      [[ -d $d ]] && printf '%8s  %s\n' "$(du -sh "$d" | cut -f1)" "$d"
    done
    ;;
  dir) echo "$root" ;;
  *) echo "usage: tools/cache.sh prune|du|dir" >&2; exit 2 ;;
esac
