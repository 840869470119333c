"""DeepSpeed's two Newton-Schulz kernels in PyTorch, as check_kernel's callables.

The kernels are tools/bench/torch_ns.py's transcription of DeepSpeed's
deepspeed/runtime/zero/muon/original_muon.py (zeropower_via_newtonschulz5 and
zeropower_via_gram_newtonschulz, SPEC 1.1 and 1.2: the cast, the transpose of a tall matrix as a
view (X.mT), X / (||X||_F + 1e-7), `c * A @ A` as Python groups it, the Gram loop with its restart,
the gram kernel's normalization in float32 before the cast), the compute dtype a parameter
instead of the accelerator's choice, so that they run on a CPU in fp32 and bf16. Needs
python3-torch; the gate does not.
"""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools" / "bench"))

import torch_ns  # noqa: E402


def adapter(kernel, dtype_name):
    """fn(G, steps) for check_kernel: numpy in (2-D or 3-D), the kernel in torch on the CPU, float32 out."""
    torch = torch_ns.load()

    def fn(G, steps):
        with torch.no_grad():
            out = kernel(torch.from_numpy(np.asarray(G)), steps, torch_ns.dtype_of(dtype_name))
        return out.float().numpy()
    fn.__name__ = fn.__qualname__ = f"{kernel.__name__}[{dtype_name}]"
    return fn


def kernels():
    """[(name, check_kernel knobs, fn)]: both kernels in fp32 and bf16. How PyTorch's CPU bf16 GEMM
    accumulates is measured, not assumed (nsverify.torch.probe_accumulation: torch 1.13 on this
    machine's CPUs sums a 64x1024 by 1024x64 product in fp32, a 16x16 one in bf16, so "compute"), and the
    bf16 checks' bounds derived for it."""
    from nsverify.torch import probe_accumulation
    bf16_accumulate = probe_accumulation("bf16").accumulate
    out = []
    for name, kernel in torch_ns.KERNELS.items():
        out.append((f"{name} fp32", dict(kernel=name, dtype="fp32"), adapter(kernel, "fp32")))
        out.append((f"{name} bf16", dict(kernel=name, dtype="bf16", accumulate=bf16_accumulate), adapter(kernel, "bf16")))
    return out
