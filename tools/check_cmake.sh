#!/usr/bin/env bash
# The CMake build, beside Bazel (docs/CMAKE.md), as CI runs it:
#   1. configure with Ninja in a build folder outside the source tree, and
#      check that CMake and Bazel build the same library files and tests
#      (tools/check_cmake_sync.sh);
#   2. build the libraries and a sample of the tests, one of each way a test
#      is linked and run (below), and run them with ctest: Bazel has already
#      built and run every test in three builds, so what CMake adds is its
#      own wiring (targets, link lines, the working folder, the durable
#      worker role), not the tests' behaviour; every test is still
#      configured, so the drift check sees them all, and
#      `cmake --build <dir>` builds them all;
#   3. install into a temporary prefix: only tickwheel/ headers, the
#      libraries, the CMake package and tickwheel.pc (and, with hiredis,
#      tickwheel::durable and tickwheel-durable.pc), and every installed
#      public header compiles on its own against the prefix;
#   4. build and run the three ways in of examples/: add_subdirectory() and
#      FetchContent (examples/cmake_subdirectory, whose install installs
#      nothing of tickwheel), find_package() of the install
#      (examples/cmake_installed), pkg-config (examples/pkgconfig);
#   5. build the libraries shared and as Release (-O3 -DNDEBUG) with
#      warnings as errors (TICKWHEEL_WERROR), install them, and build and run
#      the find_package() and pkg-config consumers against them.
# Build folders live under $TICKWHEEL_CMAKE_CACHE (default
# $HOME/.cache/tickwheel/cmake), one per checkout, and are reused. Each
# records its checkout's path; a folder whose checkout is gone, or that no
# run has used for a week, is removed, so that the cache does not grow with
# every clone CI makes.
# Compiles go through ccache where it is installed (tools/setup.sh installs
# it), its cache in $HOME/.cache/tickwheel/ccache, bounded by ccache itself
# (2 GB unless CCACHE_MAXSIZE says otherwise). Every build folder sees the
# checkout through the link <folder>/src and ccache takes paths relative to
# the folder (CCACHE_BASEDIR), so that a fresh clone of an unchanged tree
# compiles nothing again.
# Needs cmake, ninja, pkg-config and make (tools/setup.sh installs them), and
# Bazel for the drift check of step 1 (skipped without it, except under CI).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)

jobs=${TICKWHEEL_CMAKE_JOBS:-2}
caches=${TICKWHEEL_CMAKE_CACHE:-$HOME/.cache/tickwheel/cmake}
cache="$caches/$(printf '%s' "$root" | md5sum | cut -c1-12)"
build="$cache/build"
mkdir -p "$cache"
printf '%s\n' "$root" >"$cache/checkout"  # also marks it used now
for other in "$caches"/*/; do
  other=${other%/}
  [[ "$other" == "$cache" ]] && continue
  used="$other/checkout"
  if [[ -f "$used" ]]; then
    if [[ ! -d "$(cat "$used")" || -n "$(find "$used" -mtime +7)" ]]; then
      rm -rf "$other"
    fi
  elif [[ -n "$(find "$other" -maxdepth 0 -mmin +60)" ]]; then
    rm -rf "$other"  # unmarked, and not a run that is just starting
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs a command with its output in a log, shown only when it fails.
quiet() {  # quiet <what> <command...>
  local what=$1 t0=$SECONDS
  shift
  if ! "$@" >"$tmp/log" 2>&1; then
    tail -n 60 "$tmp/log"
    echo "check_cmake: FAILED: $what"
    exit 1
  fi
  [[ -n ${TICKWHEEL_CMAKE_TIMES:-} ]] && echo "cmake: $what: $((SECONDS - t0)) s" >&2
  return 0
}

for tool in cmake ninja pkg-config make; do
  command -v "$tool" >/dev/null || { echo "check_cmake: $tool not found (tools/setup.sh)"; exit 1; }
done

# The checkout as every build folder sees it (see above); a folder that an
# earlier version of this script configured from the checkout's own path
# is made again.
src="$cache/src"
ln -sfn "$root" "$src"
for folder in build:"$src" shared:"$src" \
              example_subdirectory:"$src/examples/cmake_subdirectory" \
              example_fetchcontent:"$src/examples/cmake_subdirectory"; do
  if [[ -f $cache/${folder%%:*}/CMakeCache.txt ]] &&
     ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=${folder#*:}" \
       "$cache/${folder%%:*}/CMakeCache.txt"; then
    rm -rf "${cache:?}/${folder%%:*}"
  fi
done
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/tickwheel/ccache}
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
  export CCACHE_BASEDIR=$cache CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# 1. Configure (no CMAKE_BUILD_TYPE: no optimisation flags, as Bazel's
#    default fastbuild), and the drift check.
quiet "configure" cmake -S "$src" -B "$build" -G Ninja "${launcher[@]}" \
  -DTICKWHEEL_BUILD_TESTS=ON -DTICKWHEEL_INSTALL=ON
echo "cmake: configured $build"
# The drift check reads Bazel's side with `bazel query`. Without Bazel (a
# CMake-only machine) it is skipped, and says so; CI always runs it.
if command -v bazel >/dev/null || [[ -n "${CI:-}" ]]; then
  tools/check_cmake_sync.sh "$build"
else
  echo "cmake: no bazel here: the CMake/Bazel drift check is skipped (CI runs it)"
fi

# 2. Build and test a sample: one test of each library and of each way a
#    test is linked or run (tests/CMakeLists.txt), and every example
#    program (what a CMake user builds first). The durable and Asio ones
#    only where this configuration builds them (the manifest says).
sample=(scheduling_test local_timer_test idle_tracker_test
        local_timer_fuzz_regression_test echo_server_test asio_sleep_test
        durable_fleet_test)
sample+=($(sed -n 's#^test \(examples/.*\)#\1#p' "$build/tickwheel_manifest.txt"))
targets=(tickwheel_timer tickwheel_local_timer tickwheel_idle_tracker)
grep -qx 'skipped durable' "$build/tickwheel_manifest.txt" || targets+=(tickwheel_durable)
names=()
for name in "${sample[@]}"; do
  grep -qx "test $name" "$build/tickwheel_manifest.txt" || continue
  names+=("$name")
  if [[ $name == examples/* ]]; then
    name=${name#examples/}
    targets+=("tickwheel_example_${name%_test}")
  else
    targets+=("tickwheel_$name")
  fi
done
quiet "build" cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo "cmake: built the libraries and ${#names[@]} of" \
  "$(grep -c '^test ' "$build/tickwheel_manifest.txt") tests"
regex="^($(printf '%s|' "${names[@]}" | sed 's/|$//'))\$"
if ! ctest --test-dir "$build" -j "$jobs" -R "$regex" --output-on-failure \
    >"$tmp/ctest.log" 2>&1; then
  cat "$tmp/ctest.log"
  echo "check_cmake: FAILED: ctest"
  exit 1
fi
echo "cmake: ctest: $(grep -E 'tests passed' "$tmp/ctest.log")"
if [[ $(grep -cE '^ *[0-9]+/[0-9]+ Test' "$tmp/ctest.log") -ne ${#names[@]} ]]; then
  cat "$tmp/ctest.log"
  echo "check_cmake: FAILED: ctest ran other tests than the ${#names[@]} of the sample"
  exit 1
fi

# 3. Install, and look at what was installed.
prefix="$tmp/prefix"
quiet "install" cmake --install "$build" --prefix "$prefix"
unexpected=$(cd "$prefix" && find . -type f | sed 's#^\./##' | grep -vE \
  '^include/tickwheel/(timer|timer/idle|timer/internal|base)/[a-z_]+\.h$|^include/tickwheel/durable/(durable_timer|prometheus)\.h$|^lib/libtickwheel_(timer|local_timer|idle_tracker|durable)\.a$|^lib/cmake/tickwheel/tickwheel[A-Za-z-]+\.cmake$|^lib/pkgconfig/tickwheel(-durable)?\.pc$' || true)
if [[ -n "$unexpected" ]]; then
  echo "$unexpected"
  echo "check_cmake: FAILED: the install holds files other than tickwheel's headers, libraries and package files"
  exit 1
fi
for f in lib/cmake/tickwheel/tickwheelConfig.cmake \
         lib/cmake/tickwheel/tickwheelConfigVersion.cmake lib/pkgconfig/tickwheel.pc; do
  [[ -f "$prefix/$f" ]] || { echo "check_cmake: FAILED: $f not installed"; exit 1; }
done
# With hiredis, the durable timers are installed and exported too.
if pkg-config --exists hiredis; then
  for f in include/tickwheel/durable/durable_timer.h \
           include/tickwheel/durable/prometheus.h lib/libtickwheel_durable.a \
           lib/pkgconfig/tickwheel-durable.pc; do
    [[ -f "$prefix/$f" ]] || { echo "check_cmake: FAILED: $f not installed"; exit 1; }
  done
  grep -q 'tickwheel::durable' "$prefix"/lib/cmake/tickwheel/tickwheelTargets.cmake ||
    { echo "check_cmake: FAILED: the package does not export tickwheel::durable"; exit 1; }
fi
cxx=${CXX:-c++}
for header in "$prefix"/include/tickwheel/timer/*.h "$prefix"/include/tickwheel/durable/*.h; do
  [[ -f "$header" ]] || continue
  name=${header#"$prefix"/include/}
  echo "#include \"$name\"" >"$tmp/one_header.cc"
  if ! "$cxx" -std=c++20 -fsyntax-only -I"$prefix/include" "$tmp/one_header.cc" \
      >"$tmp/log" 2>&1; then
    cat "$tmp/log"
    echo "check_cmake: FAILED: installed $name does not compile on its own"
    exit 1
  fi
done
echo "cmake: installed $(cd "$prefix" && find include -name '*.h' | wc -l) headers," \
  "each public one self-contained"

# 4. The three ways in.
sub="$src/examples/cmake_subdirectory"
for variant in subdirectory fetchcontent; do
  fetch=OFF
  [[ "$variant" == fetchcontent ]] && fetch=ON
  out="$cache/example_$variant"
  quiet "configure examples/cmake_subdirectory ($variant)" \
    cmake -S "$sub" -B "$out" -G Ninja "${launcher[@]}" -DUSE_FETCHCONTENT="$fetch"
  quiet "build examples/cmake_subdirectory ($variant)" \
    cmake --build "$out" -j "$jobs" --target subdirectory_consumer
  quiet "run examples/cmake_subdirectory ($variant)" "$out/subdirectory_consumer"
  echo "cmake: $variant: $(tail -n 1 "$tmp/log")"
  # Under a parent project tickwheel's install rules are off by default.
  quiet "install examples/cmake_subdirectory ($variant)" \
    cmake --install "$out" --prefix "$tmp/parent_install_$variant"
  if [[ -n "$(find "$tmp/parent_install_$variant" -type f 2>/dev/null)" ]]; then
    find "$tmp/parent_install_$variant" -type f
    echo "check_cmake: FAILED: a parent project's install installed tickwheel files"
    exit 1
  fi
done

quiet "configure examples/cmake_installed" \
  cmake -S examples/cmake_installed -B "$tmp/installed" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix"
quiet "build examples/cmake_installed" cmake --build "$tmp/installed"
quiet "run examples/cmake_installed" "$tmp/installed/installed_consumer"
echo "cmake: find_package: $(tail -n 1 "$tmp/log")"

mkdir -p "$tmp/pkgconfig"
quiet "build and run examples/pkgconfig" \
  env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  make --no-print-directory -C examples/pkgconfig OUT="$tmp/pkgconfig" run
echo "cmake: pkg-config: $(tail -n 1 "$tmp/log")"

# 5. Shared libraries, as Release with warnings as errors: the libraries
#    alone, installed, and the find_package() and pkg-config consumers built
#    and run against the installed .so files. Release because it is what
#    users ship, and because the optimiser's flow analysis finds warnings
#    (-Wmaybe-uninitialized) that the unoptimised build of step 2 cannot;
#    one build for both, since neither needs the other's flags changed.
shared="$cache/shared"
shared_lib="$tmp/shared_prefix/lib"
# Fails unless consumer `$2` loads the installed libtickwheel_timer.so, as
# the caller's environment finds it: CMake's consumer by its rpath, the
# pkg-config one through LD_LIBRARY_PATH (the prefix is outside the loader's
# paths, as a user's would be without an rpath).
# ldd's whole output is read before grep looks at it: with pipefail, a
# `ldd | grep -q` fails whenever grep exits on its match before ldd has
# written the rest (ldd dies of SIGPIPE).
uses_installed_so() {
  local libs
  libs="$(ldd "$2")"
  if ! grep -q "$shared_lib/libtickwheel_timer.so" <<<"$libs"; then
    echo "$libs"
    echo "check_cmake: FAILED: the $1 consumer does not use the installed libtickwheel_timer.so"
    exit 1
  fi
}
quiet "configure (shared, Release, -Werror)" cmake -S "$src" -B "$shared" -G Ninja "${launcher[@]}" \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release -DTICKWHEEL_WERROR=ON \
  -DTICKWHEEL_BUILD_TESTS=OFF -DTICKWHEEL_INSTALL=ON
quiet "build (shared, Release, -Werror)" cmake --build "$shared" -j "$jobs"
echo "cmake: shared, Release: the libraries build with -Werror"
quiet "install (shared)" cmake --install "$shared" --prefix "$tmp/shared_prefix"
for lib in timer idle_tracker; do
  [[ -f "$shared_lib/libtickwheel_$lib.so" ]] ||
    { echo "check_cmake: FAILED: libtickwheel_$lib.so not installed"; exit 1; }
done
quiet "configure examples/cmake_installed (shared)" \
  cmake -S examples/cmake_installed -B "$tmp/installed_shared" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/shared_prefix"
quiet "build examples/cmake_installed (shared)" cmake --build "$tmp/installed_shared"
uses_installed_so find_package "$tmp/installed_shared/installed_consumer"
quiet "run examples/cmake_installed (shared)" "$tmp/installed_shared/installed_consumer"
echo "cmake: shared: $(tail -n 1 "$tmp/log")"
mkdir -p "$tmp/pkgconfig_shared"
quiet "build examples/pkgconfig (shared)" \
  env PKG_CONFIG_PATH="$shared_lib/pkgconfig" \
  make --no-print-directory -C examples/pkgconfig OUT="$tmp/pkgconfig_shared"
LD_LIBRARY_PATH="$shared_lib" uses_installed_so pkg-config "$tmp/pkgconfig_shared/pkgconfig_consumer"
quiet "run examples/pkgconfig (shared)" \
  env LD_LIBRARY_PATH="$shared_lib" "$tmp/pkgconfig_shared/pkgconfig_consumer"
echo "cmake: pkg-config (shared): $(tail -n 1 "$tmp/log")"

echo "check_cmake: OK in $(( $(date +%s) - start )) s (build, ctest of a sample, install, add_subdirectory, FetchContent, find_package, pkg-config, shared Release -Werror)"
