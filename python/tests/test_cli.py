"""`nsv check`: the checks from the command line, exit 0 only if the required properties hold."""
import json
import os
import pathlib
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
                                           ("missing_colon.py", "expected FILE.py:FUNCTION")])
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
