#!/usr/bin/env bash
# Installs the Debian 12 packages nsverify needs (only those missing), then configures and
# builds incrementally into build/. Sourced by tools/test.sh and tools/report.sh.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(g++ cmake ninja-build pkg-config libeigen3-dev librapidcheck-dev libboost-test-dev libopenblas-dev
          libcli11-dev nlohmann-json3-dev libfmt-dev libbenchmark-dev python3-numpy python3-matplotlib
          python3-jinja2 pybind11-dev python3-dev python3-pytest)
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

build="${NSV_BUILD_DIR:-$repo/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# Two cores: one compile job per core. Eigen-heavy units need ~1 GiB each.
cmake --build "$build" -j "$(nproc)"
