"""`nsv check`: the checks from the command line, exit 0 only if the required properties hold."""
import json
import os
import pathlib
import re
import subprocess

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
NSV = os.environ.get("NSV_BINARY")

pytestmark = pytest.mark.skipif(not NSV, reason="NSV_BINARY (the nsv executable) not set: run through ctest")


def nsv_check(*args):
    return subprocess.run([NSV, "check", *args], capture_output=True, text=True)


def test_a_correct_kernel_exits_0():
    run = nsv_check("--impl", f"{EXAMPLES}/numpy_ns.py:standard_ns", "--kind", "kernel", "--kernel", "standard")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout


def test_a_seeded_bug_exits_1_naming_the_property():
    run = nsv_check("--impl", f"{EXAMPLES}/seeded_kernel_bugs.py:nan_silently_zeroed", "--kind", "kernel",
                    "--kernel", "standard", "--json")
    assert run.returncode == 1, run.stdout + run.stderr
    failing = [p["name"] for p in json.loads(run.stdout)["properties"] if p["status"] == "fails"]
    assert "non_finite_input_gives_non_finite_output" in failing


def test_tp_diagnosis_from_the_command_line():
    run = nsv_check("--impl", f"{EXAMPLES}/numpy_tp.py:autotp_muon_update", "--kind", "tp", "--claim", "none",
                    "--aspect-scale", "--kernel", "standard", "--json")
    assert run.returncode == 3, run.stdout + run.stderr  # a diagnosis checks no claim: "nothing checked"
    assert json.loads(run.stdout)["diagnosis"] == "per-shard NS, local-shape scale"


@pytest.mark.parametrize("impl, message", [("no/such/file.py:f", "no such file"),
                                           (f"{EXAMPLES}/numpy_ns.py:no_such_function", "no function 'no_such_function'"),
                                           ("missing_colon.py", "expected FILE.py:FUNCTION"),
                                           (":f", "expected FILE.py:FUNCTION"),
                                           (f"{EXAMPLES}/numpy_ns.py:", "expected FILE.py:FUNCTION")])
def test_usage_errors_exit_2_saying_what_to_fix(impl, message):
    run = nsv_check("--impl", impl, "--kind", "kernel")
    assert run.returncode == 2 and message in run.stderr


def test_promise_bitwise_fails_a_kernel_the_default_passes(tmp_path):
    impl = f"{EXAMPLES}/plain_numpy_ns.py:plain_ns"
    default = nsv_check("--impl", impl, "--kind", "kernel", "--kernel", "standard", "--max-success", "40")
    assert default.returncode == 0, default.stdout + default.stderr
    bitwise = nsv_check("--impl", impl, "--kind", "kernel", "--kernel", "standard", "--max-success", "40",
                        "--promise", "bitwise", "--counterexamples", str(tmp_path / "ce"))
    assert bitwise.returncode == 1, bitwise.stdout + bitwise.stderr
    assert f"counterexamples saved in: {tmp_path / 'ce'}" in bitwise.stdout
    assert list((tmp_path / "ce").rglob("*.npy"))
    bad = nsv_check("--impl", impl, "--kind", "kernel", "--promise", "exact")
    assert bad.returncode == 2 and "invalid choice: 'exact'" in bad.stderr


# The implementation cannot end the check: exiting at import, crashing or hanging is reported (exit 2,
# "cannot load or run"), never taken for a verdict (exiting in a call fails the case: test_exits.py). Each case within a time limit,
# in a folder whose files come out unchanged.
HOSTILE = {
    "exit_at_import": ("import sys\nsys.exit(0)\ndef f(G, steps): return G\n", [],
                       r"called sys\.exit\(0\) while being imported: nothing was checked"),
    "os_exit_at_import": ("import os\nos._exit(0)\ndef f(G, steps): return G\n", [],
                          r"ended the checking process \(exit status 0, outside any call"),
    "raise_at_import": ("raise RuntimeError('boom')\ndef f(G, steps): return G\n", [],
                        r"raised RuntimeError while being imported: boom"),
    "crash_in_call": ("import os, signal\ndef f(G, steps): os.kill(os.getpid(), signal.SIGSEGV)\n", [],
                      r"ended the checking process \(signal 11, in call 1 \(G \d+x\d+\)\)"),
    "slow_call": ("import time\ndef f(G, steps):\n    time.sleep(60)\n    return G\n", ["--call-timeout", "2"],
                  r"call 1 \((G \d+x\d+|a batch of \d+ x \d+x\d+)\) of .* did not return within --call-timeout 2 s"),
    "bad_call_timeout": ("def f(G, steps): return G\n", ["--call-timeout", "nan"],
                         r"--call-timeout must be a finite number of seconds > 0, got nan"),
    "bad_steps": ("def f(G, steps): return G\n", ["--steps", "-3"], r"--steps must be an integer between 0 and 1000"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_implementation_that_ends_or_stalls_the_check_exits_2(name, tmp_path):
    source, extra, pattern = HOSTILE[name]
    impl = tmp_path / "impl.py"
    impl.write_text(source)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    run = subprocess.run([NSV, "check", "--impl", f"{impl}:f", "--kind", "kernel", "--max-success", "5", *extra],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2, f"exit {run.returncode}: {run.stdout[-1000:]} {run.stderr[-1000:]}"
    assert re.search(pattern, run.stderr), run.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "__pycache__"} == before


def test_progress_is_reported_for_a_slow_implementation(tmp_path):
    impl = tmp_path / "impl.py"
    impl.write_text("import time\ndef f(G, steps):\n    time.sleep(3)\n    return G\n")
    run = subprocess.run([NSV, "check", "--impl", f"{impl}:f", "--kind", "kernel", "--progress", "1",
                          "--call-timeout", "2"], capture_output=True, text=True, timeout=60)
    # the progress line names the running call's input
    assert run.returncode == 2 and re.search(r"call 1 \((G \d+x\d+|a batch of \d+ x \d+x\d+)\) running for", run.stderr), \
        run.stderr

