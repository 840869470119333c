"""nsverify.torch.launch under torchrun (skipped where torch is absent): tp 2 x dp 2 on four launched gloo
processes on the loopback, the whole-matrix (gather) Muon of test_torch_optimizer.py passing claim="exact"
with its reference on the first two ranks, and single-device Muon failing there too."""
import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = dict(hidden_size=16, intermediate_size=20, num_attention_heads=4, num_key_value_heads=2, vocab_size=64)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(factory, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "4", "--master_addr",
           "127.0.0.1", "--master_port", str(free_port()), "-m", "nsverify.torch.launch",
           f"{HERE / 'test_torch_optimizer.py'}:{factory}", "--config", str(config), "--tp", "2", "--dp", "2",
           "--steps", "2", "--timeout", "60", "--json"]
    # torch 1.13's launcher on Python 3.11 parses only "1" and "2" of its stream flags (Std is an IntFlag: 3.11
    # iterates its single-bit members only), so stdout is redirected to files and teed back, lines prefixed "[rank]:"
    cmd[3:3] = ["--redirects", "1", "--tee", "1", "--log_dir", str(tmp_path / "logs")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    lines = [line.split(":", 1)[1] for line in out.stdout.splitlines() if line.partition(":")[2].startswith("{")]
    assert lines, out.stdout[-2000:] + out.stderr[-3000:]
    # The tee writes each rank's prefix from its own thread, so the next "[default0]:" can land on the end of the
    # JSON line: read the one JSON value the line starts with.
    return out.returncode, json.JSONDecoder().raw_decode(lines[-1])[0]


def test_launched_gather_muon_is_exact_on_tp_2_x_dp_2(tmp_path):
    code, result = launch("gather_muon", tmp_path)
    assert code == 0 and result["verdict"] == "PASS", result["reason"]
    assert result["environment"]["world_size"] == 4 and len(result["collectives"]["tp"]) == 4
    assert len(result["collectives"]["reference"]) == 2


def test_launched_single_device_muon_fails(tmp_path):
    code, result = launch("single_device_muon", tmp_path)
    assert code == 1 and result["verdict"] == "FAIL", result["reason"]
