#!/usr/bin/env bash
# Installs the Debian 12 packages nsverify needs (only those missing), then configures and
# builds incrementally into build/ (or $NSV_BUILD_DIR, configured once with the extra CMake
# arguments in $NSV_CMAKE_ARGS). Run by tools/test.sh, tools/report.sh and tools/sanitize.sh.
# NSV_EXTRA_PACKAGES: more packages to install (tools/fuzz.sh: clang's); NSV_SETUP_ONLY_PACKAGES=1:
# install, do not build.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(g++ cmake ninja-build pkg-config libeigen3-dev librapidcheck-dev librandom123-dev libboost-test-dev libopenblas-dev
          libcli11-dev nlohmann-json3-dev libfmt-dev libbenchmark-dev python3-numpy python3-matplotlib
          python3-jinja2 pybind11-dev python3-dev python3-pytest python3-torch libopenmpi-dev openmpi-bin
          python3-hypothesis python3-venv python3-pip python3-setuptools python3-cloudpickle)
# shellcheck disable=SC2206 # a list of package names
packages+=(${NSV_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "nsverify: installing missing Debian packages: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "${NSV_SETUP_ONLY_PACKAGES:-0}" = 1 ] && exit 0

build="${NSV_BUILD_DIR:-$repo/build}"
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086 # NSV_CMAKE_ARGS is a list of arguments
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${NSV_CMAKE_ARGS:-} >/dev/null
fi
# Two cores: one compile job per core. Eigen-heavy units need ~1 GiB each.
cmake --build "$build" -j "$(nproc)"
