"""README.md runs as written: every ```sh and ```python block is executed (issue 29, item 6).

A shell block runs in bash (set -e, one process per block, so an `export` or `cd` carries to the
next line) in a scratch folder holding links to the repository's fixtures/, tools/, examples/ and
the build folder, with the build's `nsv` first on the PATH and the inputs the README names
(G.npy, q_grad.npy) generated first. A command is left out only if SKIPPED below says why (the
gate itself, minutes-long runs, MPI, placeholders for strings a failure prints); the counts are
checked, so a new block or command is run unless it is listed. A Python block runs with the
objects it assumes (a model, an optimizer after a backward pass) built first, and every test_*
function it defines is called.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NSV = os.environ.get("NSV_BINARY")
BUILD = pathlib.Path(NSV).resolve().parents[1] if NSV else None  # NSV is <build>/cli/nsv
pytestmark = pytest.mark.skipif(not NSV, reason="NSV_BINARY (the nsv executable) not set: run through ctest")

# (regular expression matched at the start of a command, why it is not run here)
SKIPPED = [
    (r"\./tools/report\.sh", "the main job: every report section, tens of CPU-minutes"),
    (r"\./tools/test\.sh", "the test gate itself (this test is part of it)"),
    (r"\./tools/sanitize\.sh", "a second, instrumented build and the whole gate on it"),
    (r"\./tools/fuzz\.sh", "a clang build and 600 s of fuzzing per harness"),
    (r"nsv sweep --shapes 512x1024,1024x512", "576 cases of 512x1024 NS on simulated ranks: minutes"),
    (r"nsv step --grads fixtures/training", "a 4-layer Llama's gradients at tp 4: minutes"),
    (r"nsv report --quick", "the whole report (quick): minutes"),
    (r"nsv report --only gram_stability", "re-renders a section of an existing report (needs `nsv report` first)"),
    (r"mpirun", "needs Open MPI ranks (the MPI tests of the gate run these)"),
    (r"tools/mpi_orders\.sh", "needs Open MPI ranks"),
    (r"RC_PARAMS=\"reproduce=", "a placeholder for the replay string a failing property prints"),
    (r"ctest --test-dir build -R python_nsverify", "runs the Python tests, this one among them"),
    (r"tools/mutation/sample\.py --(sample|rerun|patches)", "rebuilds and runs the gate once per mutant: hours"),
    (r"/usr/bin/python3 -m venv", "a pip install (a full build): python/tests/pip_install.sh runs it (ctest -L install)"),
    (r"~/venv-nsv/bin/", "needs the pip install above"),
]


def blocks():
    """[(language, first line number, text)] of README's ```sh and ```python blocks."""
    out, lines, i = [], README.read_text().splitlines(), 0
    while i < len(lines):
        m = re.match(r"^```(sh|python)\s*$", lines[i])
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append((m.group(1), i + 1, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


def commands(text):
    """A shell block's commands: continuation lines joined, comment lines and trailing comments dropped."""
    out, current = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        current += " " + stripped.rstrip("\\").strip() if current else stripped.rstrip("\\").strip()
        if not stripped.endswith("\\"):
            out.append(re.sub(r"\s+#.*$", "", current))
            current = ""
    return out


def skip_reason(command):
    if "./properties/nsv_properties" in command and not (BUILD and (BUILD / "properties" / "nsv_properties").is_file()):
        return "the property executables are not built in this build folder"
    for pattern, reason in SKIPPED:
        if re.match(pattern, command):
            return reason
    return None


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder that looks like the repository root to README's commands, with their inputs made."""
    d = tmp_path_factory.mktemp("readme")
    for name in ("fixtures", "tools", "examples", "python", "properties"):
        (d / name).symlink_to(ROOT / name)
    (d / "build").symlink_to(BUILD)
    rng = np.random.default_rng(29)
    np.save(d / "G.npy", rng.standard_normal((256, 512)).astype(np.float32))
    np.save(d / "q_grad.npy", rng.standard_normal((512, 256)).astype(np.float32))
    return d


def environment(scratch):
    env = dict(os.environ)
    env["PATH"] = f"{pathlib.Path(NSV).parent}:{env['PATH']}"
    env.setdefault("OPENBLAS_CORETYPE", "Haswell")
    env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


# A block that starts torch rank processes (gloo) is marked torch_ranks, like the test files that do: CTest
# runs those blocks as python_nsverify_readme_torch_ranks, which tools/sanitize.sh leaves out with the others.
STARTS_TORCH_RANKS = re.compile(r"--framework torch --kind tp|--kind optimizer|\bnt\.check_(tp|optimizer)\(")


SH_BLOCKS = [b for b in blocks() if b[0] == "sh"]
PY_BLOCKS = [b for b in blocks() if b[0] == "python"]


def block_params(found):
    return [pytest.param(*b, id=f"{b[0]}-line-{b[1]}",
                         marks=[pytest.mark.torch_ranks] if STARTS_TORCH_RANKS.search(b[2]) else [])
            for b in found]


def test_the_readme_has_the_blocks_this_test_counts():
    ran = [c for _, _, t in SH_BLOCKS for c in commands(t) if not skip_reason(c)]
    skipped = [c for _, _, t in SH_BLOCKS for c in commands(t) if skip_reason(c)]
    print(f"README: {len(SH_BLOCKS)} sh blocks ({len(ran)} commands run, {len(skipped)} skipped), "
          f"{len(PY_BLOCKS)} python blocks")
    assert len(SH_BLOCKS) >= 10 and len(PY_BLOCKS) >= 2 and len(ran) >= 13
    # every skip reason still names a command README has (a stale entry would hide nothing)
    every = [c for _, _, t in SH_BLOCKS for c in commands(t)]
    for pattern, reason in SKIPPED:
        assert any(re.match(pattern, c) for c in every), f"SKIPPED names no README command any more: {pattern}"


@pytest.mark.parametrize("language, line, text", block_params(SH_BLOCKS))
def test_shell_block_runs(language, line, text, scratch):
    run = [c for c in commands(text) if not skip_reason(c)]
    if not run:
        pytest.skip("every command of this block is listed in SKIPPED: " +
                    "; ".join(f"{c[:40]}: {skip_reason(c)}" for c in commands(text)))
    script = "set -e\n" + "\n".join(f"echo '+ {c[:200]}'\n{c}" for c in run) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=scratch, env=environment(scratch), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"README line {line}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


# What README's Python blocks assume exists: for the dump snippet, a model whose Muon matrices sit
# in "layers.", and an optimizer with a momentum buffer after one backward pass.
TRAINING_LOOP_CONTEXT = textwrap.dedent("""
    import torch
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.layers = torch.nn.ModuleList([torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.95)
    model.layers[1](model.layers[0](torch.randn(4, 8))).square().sum().backward()
    optimizer.step()   # the momentum buffers exist from the first step on
    model.layers[1](model.layers[0](torch.randn(4, 8))).square().sum().backward()
""")


@pytest.mark.parametrize("language, line, text", block_params(PY_BLOCKS))
def test_python_block_runs(language, line, text, scratch, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    namespace = {"__name__": f"readme_line_{line}"}
    if "optimizer.step()" in text or "nsverify.torch" in text:
        pytest.importorskip("torch")
    if "optimizer.step()" in text:
        exec(compile(TRAINING_LOOP_CONTEXT, "<readme context>", "exec"), namespace)
    exec(compile(text, f"README.md:{line}", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    for test in tests:
        test()
    if "optimizer.step()" in text:
        dumped = sorted(p.relative_to(scratch / "dump").as_posix() for p in (scratch / "dump").rglob("*") if p.is_file())
        assert dumped, "the dump snippet wrote nothing"
    # A block of top-level statements has run above; one that defines tests must have them called.
    assert tests or "def test_" not in text, f"README line {line}: the block's test_* functions were not found"
