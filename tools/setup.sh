#!/usr/bin/env bash
# Installs what tickwheel needs on Debian 12, and nothing when it is present.
#
# Everything comes from Debian's archive: Bazel 4.2.3 (bazel-bootstrap), Abseil,
# fmt, GoogleTest/GoogleMock, Google Benchmark, Boost (Asio), libuv and
# libevent (the benchmark's baselines), a JDK and Netty 4.1 (libnetty-java:
# the benchmark's Netty HashedWheelTimer, compiled and run in a JVM by
# tools/bench/netty_bench.cc), standalone Asio (libasio-dev, for
# timer/asio.h), clang 14 with its sanitizer/libFuzzer runtime, clang-format
# (the style check), CMake, Ninja, pkg-config, make and ccache for the CMake
# build and its consumers (tools/check_cmake.sh), and redis-server (with redis-tools'
# redis-benchmark) and libhiredis-dev for the durable timers (durable/), whose
# tests start redis-servers of their own, and Prometheus's Python client
# (python3-prometheus-client, for the system's /usr/bin/python3), whose text
# parser reads tickwheel's metrics in tests/prometheus/parse_test.py, and
# Doxygen for the API reference (tools/docs_reference.sh). Debian
# may start a Redis service on port 6379 when it installs redis-server;
# nothing of tickwheel uses it. Safe
# to run repeatedly: when every package is installed it only checks and
# returns.
set -euo pipefail

packages=(
  bazel-bootstrap
  libabsl-dev
  libfmt-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libboost-dev
  libasio-dev
  libuv1-dev
  libevent-dev
  default-jdk-headless
  libnetty-java
  clang
  clang-format
  libclang-rt-14-dev
  g++
  pkg-config
  cmake
  ninja-build
  ccache
  make
  git
  redis-server
  redis-tools
  libhiredis-dev
  python3-prometheus-client
  doxygen
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "tickwheel setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tickwheel setup: done" >&2
