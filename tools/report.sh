#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes reports/ with `nsv report`: the
# CSV/JSON data and report.json, then the figures (tools/plot_report.py, matplotlib) and
# README.md rendered from report.json (tools/report/render_report.py, Jinja2); Dao-AILab's Gram
# stress test (--only gram_stress); then reports/mpi/
# (tools/mpi_orders.sh); then reports/python/ (tools/report/python_checks_report.py), reports/torch/
# (tools/report/torch_checks_report.py) and reports/optimizers/ (tools/report/optimizer_checks_report.py),
# these two where torch imports.
# Extra arguments go to `nsv report` (e.g. --quick, --out-dir DIR).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/tools/setup.sh"
build="${NSV_BUILD_DIR:-$repo/build}"
cd "$repo"
# The OpenBLAS kernel the tests pin (CMakeLists.txt, NSV_BLAS_CORETYPE), so the figures carry the
# bits the gate checks, whatever kernel OpenBLAS would pick on this CPU.
coretype=$(sed -n 's/^NSV_BLAS_CORETYPE:STRING=//p' "$build/CMakeCache.txt")
if [ -n "$coretype" ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then export OPENBLAS_CORETYPE="$coretype"; fi
"$build/cli/nsv" report "$@"
# A full run also reruns Dao-AILab's Gram NS stress test (3072x768 matrices, about 4 minutes),
# which `nsv report` alone reads from its kept CSV; then the Gram section and README again.
if [ $# -eq 0 ]; then "$build/cli/nsv" report --only gram_stress; fi
# Open MPI's all-reduce algorithms against the simulated orders -> reports/mpi/ (about a minute).
NSV_BUILD_DIR="$build" "$repo/tools/mpi_orders.sh"
# The Python checks on the shipped numpy implementations, seeded bugs and (where torch imports)
# DeepSpeed's kernels -> reports/python/.
if [ $# -eq 0 ]; then PYTHONPATH="$build/python" /usr/bin/python3 "$repo/tools/report/python_checks_report.py" --out "$repo/reports/python"; fi
# nsverify.torch's checks on PyTorch code (real gloo ranks, public NS routines) -> reports/torch/
# (about 4 minutes), where Debian's interpreter imports torch.
if [ $# -eq 0 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  PYTHONPATH="$build/python" /usr/bin/python3 "$repo/tools/report/torch_checks_report.py" --out "$repo/reports/torch"
fi
# nsverify.torch.check_optimizer on the optimizer catalogue (examples/optimizers) and the seed's figure
# reproduced -> reports/optimizers/, where Debian's interpreter imports torch.
if [ $# -eq 0 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  PYTHONPATH="$build/python" /usr/bin/python3 "$repo/tools/report/optimizer_checks_report.py" --out "$repo/reports/optimizers"
fi
