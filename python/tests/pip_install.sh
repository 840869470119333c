#!/usr/bin/env bash
# `pip install .` as README's "Python package" section says, into a fresh virtual environment made
# with Debian's interpreter (--system-site-packages: numpy, torch and pytest from Debian), offline;
# then, from outside the checkout, `import nsverify` and `import nsverify.torch`, a check that must
# pass and one that must fail, and the `nsv` command. The CMake build is the one pip keeps
# (build/pip-*; a full build the first time). Usage: pip_install.sh REPO   (ctest -L install)
set -euo pipefail
repo=$(realpath "$1")
work=$(mktemp -d "${TMPDIR:-/tmp}/nsv-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
(cd "$repo" && "$work/venv/bin/pip" install --no-build-isolation --no-index --quiet .)
cd "$work"
"$work/venv/bin/python" - <<'PY'
import nsverify
import nsverify.torch  # noqa: F401  the subpackage is installed too
assert nsverify.__file__.startswith(__import__("sys").prefix), nsverify.__file__  # the venv's copy, not the checkout's
right = nsverify.check_kernel(lambda G, steps: nsverify.ns(G, kernel="standard", steps=steps), kernel="standard", max_success=10)
wrong = nsverify.check_kernel(lambda G, steps: G.copy(), kernel="standard", max_success=10)
assert right.verdict == "PASS" and wrong.verdict == "FAIL", (right, wrong)
print("ok: import nsverify, nsverify.torch; the reference passes, the identity fails")
PY
"$work/venv/bin/nsv" --help | grep -q "Run \`nsv COMMAND --help\`" && echo "ok: the venv's nsv command runs"
"$work/venv/bin/python" -c "from importlib.metadata import entry_points as e; assert [p.value for p in e(group='pytest11') if p.name == 'nsverify'] == ['nsverify.pytest_plugin']" &&
  echo "ok: the pytest plugin is registered (entry point pytest11: nsverify)"
