#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes reports/ (nsv report).
# Extra arguments go to `nsv report` (e.g. --quick, --out-dir DIR).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/tools/setup.sh"
build="${NSV_BUILD_DIR:-$repo/build}"
cd "$repo"
exec "$build/tools/nsv/nsv" report "$@"
