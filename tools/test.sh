#!/usr/bin/env bash
# The test gate: installs what is missing, builds, runs every property labelled `gate`.
# Extra arguments go to ctest (e.g. -R per_head, or -L wide for the slower tier).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/tools/setup.sh"
build="${NSV_BUILD_DIR:-$repo/build}"
if [ $# -eq 0 ]; then set -- -L gate; fi
cd "$build"
# One test per core: a test that needs two (PROCESSORS, e.g. the MPI ones) is given both.
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
