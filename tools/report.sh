#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes reports/ with `nsv report`: the
# CSV/JSON data and report.json, then the figures (tools/plot_report.py, matplotlib) and
# README.md rendered from report.json (tools/report/render_report.py, Jinja2).
# Extra arguments go to `nsv report` (e.g. --quick, --out-dir DIR).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/tools/setup.sh"
build="${NSV_BUILD_DIR:-$repo/build}"
cd "$repo"
exec "$build/tools/nsv/nsv" report "$@"
