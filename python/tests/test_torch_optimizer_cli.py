"""`nsv check --kind optimizer`: a whole optimizer from the command line on real torch ranks, exit by its verdict
(kept apart from test_cli.py: it starts torch rank processes, which the sanitizer job leaves out)."""
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


def _tiny_params(tmp_path):
    path = tmp_path / "params.json"
    path.write_text(json.dumps([dict(name="q", shape=[16, 12], split=0, heads=4, kv_heads=2),
                                dict(name="o", shape=[12, 16], split=1), dict(name="norm", shape=[12])]))
    return str(path)


def test_an_optimizer_from_the_command_line_exits_by_its_verdict(tmp_path):
    pytest.importorskip("torch")
    params = _tiny_params(tmp_path)
    good = nsv_check("--impl", f"{EXAMPLES}/optimizers/gather_tp_muon.py:make_optimizer", "--kind", "optimizer",
                     "--params", params, "--tp", "2", "--steps", "2")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = nsv_check("--impl", f"{EXAMPLES}/optimizers/per_shard_muon.py:make_optimizer", "--kind", "optimizer",
                    "--params", params, "--tp", "2", "--steps", "2", "--json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    report = json.loads(bad.stdout)
    assert report["verdict"] == "FAIL"
    assert "per-shard NS, local-shape scale" in report["diagnosis"]["q"]["matched"]


def test_an_optimizer_check_refuses_the_flags_it_lacks_and_wants_its_parameters(tmp_path):
    run = nsv_check("--impl", f"{EXAMPLES}/optimizers/gather_tp_muon.py:make_optimizer", "--kind", "optimizer",
                    "--params", _tiny_params(tmp_path), "--max-dim", "16")
    assert run.returncode == 2 and "--max-dim: not a setting of the optimizer check" in run.stderr
    run = nsv_check("--impl", f"{EXAMPLES}/optimizers/gather_tp_muon.py:make_optimizer", "--kind", "optimizer")
    assert run.returncode == 2 and "exactly one of params" in run.stderr
