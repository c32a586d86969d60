#!/usr/bin/env bash
# Shared set-up for tools/run.sh and tools/test.sh (sourced, not run):
#   1. installs the Debian packages that are missing (only those; apt needs root or sudo),
#   2. configures the CMake build in $BUILD_DIR (default build/) once,
#   3. builds incrementally with ccache and two jobs.
# Idempotent: when nothing changed it costs a dpkg query and a no-op ninja run.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
CMAKE_EXTRA_ARGS=${CMAKE_EXTRA_ARGS:-}

# Build tools and the libraries of DESIGN.md's dependency list.
PACKAGES=(
  cmake ninja-build g++ pkg-config ccache
  liburing-dev libyaml-cpp-dev prometheus-cpp-dev libboost-dev libgtest-dev libgmock-dev
  libbenchmark-dev libcli11-dev nlohmann-json3-dev libxxhash-dev libturbojpeg0-dev libfmt-dev
  openmpi-bin libopenmpi-dev
)

stallscope_install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing missing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

stallscope_build() {
  stallscope_install_missing "${PACKAGES[@]}"
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    echo "setup: configuring $BUILD_DIR" >&2
    # shellcheck disable=SC2086
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $CMAKE_EXTRA_ARGS >&2
  fi
  cmake --build "$BUILD_DIR" -j2 >&2
}
