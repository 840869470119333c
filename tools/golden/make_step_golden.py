#!/usr/bin/python3
"""DeepSpeed's Muon optimizer steps as golden fixtures: weight decay, tall and short head blocks.

Runs DeepSpeed's own SingleDeviceMuon (deepspeed/runtime/zero/muon/original_muon.py, a version
with per-head Muon: `muon_update(..., num_heads=...)`, DeepSpeed PR #8384) with PyTorch on the
CPU, for a few parameters over three optimizer steps each, and writes every input and result
as .npy with a manifest (fixtures/golden/deepspeed_steps/). properties/golden_steps.cpp checks
nsverify's Muon step against them.

DeepSpeed itself is not installed here: the file is loaded on its own, with its three imports
from DeepSpeed (deepspeed.comm, deepspeed.runtime.compiler, deepspeed.accelerator) replaced by
what they do on one CPU process: no communication, compile() as the identity, and an
accelerator without fp16/bf16 support (so both kernels iterate in fp32, DeepSpeed's CPU
fallback). Needs Debian's python3-torch (large: not a dependency of the gate) and numpy.

  tools/golden/make_step_golden.py --original-muon PATH/original_muon.py [--out fixtures/golden/deepspeed_steps]
"""
import argparse
import hashlib
import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np

# One parameter per case: its shape, per-head count (None: the whole matrix), weight decay.
CASES = [
    {"name": "whole_wide_wd", "shape": [48, 96], "num_heads": None, "weight_decay": 0.1},
    {"name": "whole_tall_wd", "shape": [96, 32], "num_heads": None, "weight_decay": 0.01},
    # head_dim 64 > in_features 16: each head block is tall and scaled by sqrt(64 / 16) = 2
    {"name": "tall_heads_wd", "shape": [128, 16], "num_heads": 2, "weight_decay": 0.05},
    # head_dim 32 < in_features 64: no scale
    {"name": "short_heads_wd", "shape": [96, 64], "num_heads": 3, "weight_decay": 0.1},
]
STEPS, LR, MOMENTUM = 3, 0.02, 0.95


def load_deepspeed_muon(path: Path):
    """original_muon.py with its DeepSpeed imports stood in for by one CPU process's behaviour."""
    deepspeed = types.ModuleType("deepspeed")
    comm = types.ModuleType("deepspeed.comm")
    comm.get_world_size, comm.get_rank = (lambda: 1), (lambda: 0)
    runtime = types.ModuleType("deepspeed.runtime")
    compiler = types.ModuleType("deepspeed.runtime.compiler")
    compiler.compile = lambda *args, **kwargs: (lambda f: f)
    runtime.compiler = compiler
    accelerator = types.ModuleType("deepspeed.accelerator")
    cpu = types.SimpleNamespace(is_fp16_supported=lambda: False, is_bf16_supported=lambda: False)
    accelerator.get_accelerator = lambda: cpu
    deepspeed.comm, deepspeed.runtime, deepspeed.accelerator = comm, runtime, accelerator
    for name, module in [("deepspeed", deepspeed), ("deepspeed.comm", comm), ("deepspeed.runtime", runtime),
                         ("deepspeed.runtime.compiler", compiler), ("deepspeed.accelerator", accelerator)]:
        sys.modules[name] = module
    spec = importlib.util.spec_from_file_location("original_muon", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if "num_heads" not in module.muon_update.__code__.co_varnames:
        sys.exit(f"{path}: this original_muon.py has no per-head Muon (muon_update(..., num_heads)); "
                 "use a DeepSpeed version with PR #8384")
    return module


def run_case(muon, torch, case: dict, kernel: str, seed: int, out: Path) -> dict:
    torch.manual_seed(seed)
    rows, cols = case["shape"]
    param = torch.nn.Parameter(torch.randn(rows, cols, dtype=torch.float32) * 0.02)
    if case["num_heads"] is not None:
        param.muon_num_heads = case["num_heads"]
    opt = muon.SingleDeviceMuon([param], lr=LR, weight_decay=case["weight_decay"], momentum=MOMENTUM, ns_method=kernel)
    stem = f"{case['name']}_{kernel}"
    record = {**case, "kernel": kernel, "lr": LR, "beta": MOMENTUM, "nesterov": True, "ns_steps": 5,
              "compute_dtype": "fp32", "seed": seed, "steps": []}
    np.save(out / f"{stem}_param0.npy", param.detach().numpy())
    for k in range(STEPS):
        grad = torch.randn(rows, cols, dtype=torch.float32)
        momentum_before = opt.state[param]["momentum_buffer"].clone() if param in opt.state else torch.zeros_like(param)
        # DeepSpeed's update for this step, on copies (muon_update changes its arguments in place)
        update = muon.muon_update(grad.clone(), momentum_before.clone(), beta=MOMENTUM, ns_method=kernel,
                                  num_heads=case["num_heads"])
        param.grad = grad.clone()
        opt.step()
        files = {"grad": f"{stem}_grad{k}.npy", "update": f"{stem}_update{k}.npy",
                 "momentum_after": f"{stem}_momentum{k + 1}.npy", "param_after": f"{stem}_param{k + 1}.npy"}
        np.save(out / files["grad"], grad.numpy())
        np.save(out / files["update"], update.detach().numpy())
        np.save(out / files["momentum_after"], opt.state[param]["momentum_buffer"].numpy())
        np.save(out / files["param_after"], param.detach().numpy())
        record["steps"].append(files)
    record["param0"] = f"{stem}_param0.npy"
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--original-muon", type=Path, required=True, help="DeepSpeed's original_muon.py (with per-head Muon)")
    ap.add_argument("--out", type=Path, default=Path("fixtures/golden/deepspeed_steps"))
    args = ap.parse_args()
    if not args.original_muon.is_file():
        sys.exit(f"--original-muon {args.original_muon}: no such file")
    try:
        import torch
    except ImportError:
        sys.exit("needs PyTorch: apt-get install python3-torch (Debian)")
    muon = load_deepspeed_muon(args.original_muon)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [run_case(muon, torch, case, kernel, 1000 + i, args.out)
             for i, (case, kernel) in enumerate((c, k) for c in CASES for k in ("standard", "gram"))]
    source = args.original_muon.read_bytes()
    manifest = {"source": "DeepSpeed deepspeed/runtime/zero/muon/original_muon.py with per-head Muon (PR #8384): "
                          "SingleDeviceMuon.step and muon_update, executed with PyTorch " + torch.__version__ + " on CPU "
                          "(no fp16/bf16 accelerator: both kernels iterate in fp32)",
                "source_file": args.original_muon.name,
                "source_sha256": hashlib.sha256(source).hexdigest(),
                "generator": "tools/golden/make_step_golden.py", "cases": cases}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(cases)} cases of {STEPS} steps to {args.out}")


if __name__ == "__main__":
    main()
