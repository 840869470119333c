"""What the device can do in a dtype, found out by trying it rather than assumed.

support(dtype, device)       raises DtypeNotSupported when torch cannot multiply matrices in the dtype there
                             (torch 1.13 on a CPU: fp16)
probe_accumulation(...)      how the device's matmul accumulates in a narrow dtype: in fp32, rounding the
                             sum once (tensor cores, oneDNN on a CPU with AVX512-BF16), or in the dtype
                             itself (torch's native CPU kernel); measured once per process
"""

import dataclasses
import functools
import math

import torch

from ._tensors import torch_dtype


class DtypeNotSupported(ValueError):
    """The claimed dtype cannot be run on the device by this torch (a usage error, not a failed property)."""


@functools.lru_cache(maxsize=None)
def support(dtype, device="cpu"):
    """None if a matmul in dtype runs on device; raises DtypeNotSupported saying what torch said otherwise."""
    t = torch_dtype(dtype)
    try:
        a = torch.ones(2, 2, dtype=t, device=device)
        (a @ a).sum().item()
    except (RuntimeError, TypeError) as e:
        raise DtypeNotSupported(f"{dtype} is not supported by torch {torch.__version__} on {device}: a {dtype} matmul "
                                f"raises \"{e}\". Check another dtype (fp32, bf16) or run on a device that has "
                                f"{dtype} GEMMs.") from None


@dataclasses.dataclass(frozen=True)
class AccumulationProbe:
    """How torch's matmul in `dtype` on `device` accumulated on random matrices.

    accumulate      what nsverify's knob should say: "fp32" (products summed in fp32, the sum rounded once
                    to the dtype) or "compute" (summed in the dtype)
    match_fp32      fraction of elements bit-identical to the fp32-accumulated product rounded once
    match_compute   fraction bit-identical to a sequential sum in the dtype (one order of many a kernel may
                    use, so low even for a kernel that does accumulate in the dtype)
    error, error_fp32, error_compute
                    relative Frobenius error against the float64 product: torch's, and the two emulations'
    """
    dtype: str
    device: str
    torch_version: str
    inner_dim: int
    accumulate: str
    match_fp32: float
    match_compute: float
    error: float
    error_fp32: float
    error_compute: float

    def words(self):
        if self.dtype in ("fp32", "fp64"):
            return f"{self.dtype}: accumulates in {self.dtype} (not probed)"
        how = "fp32, rounding the sum once" if self.accumulate == "fp32" else f"{self.dtype} (compute)"
        return (f"torch {self.torch_version}'s {self.dtype} matmul on {self.device} accumulates in {how}: "
                f"{self.match_fp32:.2%} of the elements of a 64x{self.inner_dim} by {self.inner_dim}x64 product are "
                f"bit-identical to fp32 accumulation rounded once; relative error {self.error:.2e} against the exact "
                f"product (fp32 accumulation {self.error_fp32:.2e}, {self.dtype} accumulation {self.error_compute:.2e})")


def _rel(a, b):
    return float((a - b).norm() / b.norm())


@functools.lru_cache(maxsize=None)
def probe_accumulation(dtype="bf16", device="cpu", inner_dim=1024, seed=0):
    """Measure how the matmul in dtype accumulates (see AccumulationProbe); cached per process."""
    if dtype in ("fp32", "fp64"):
        return AccumulationProbe(dtype, device, torch.__version__, 0, "fp32", 1.0, 1.0, 0.0, 0.0, 0.0)
    support(dtype, device)
    t = torch_dtype(dtype)
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(64, inner_dim, generator=g).to(t)
    b = torch.randn(inner_dim, 64, generator=g).to(t)
    got = (a.to(device) @ b.to(device)).cpu()
    exact = a.double() @ b.double()
    fp32 = (a.float() @ b.float()).to(t)  # each product exact in fp32, the sum in fp32, rounded once
    acc = torch.zeros(64, 64)
    af, bf = a.float(), b.float()
    for k in range(inner_dim):  # the sum rounded to the dtype after every addition
        acc = (acc + af[:, k:k + 1] * bf[k:k + 1, :]).to(t).float()
    bits = torch.int16
    match_fp32 = float((got.view(bits) == fp32.view(bits)).double().mean())
    match_compute = float((got.view(bits) == acc.to(t).view(bits)).double().mean())
    error, error_fp32, error_compute = _rel(got.double(), exact), _rel(fp32.double(), exact), _rel(acc.double(), exact)
    # fp32 when (nearly) every element is fp32's; otherwise whichever emulation's error is nearer torch's
    if match_fp32 >= 0.99:
        accumulate = "fp32"
    else:
        distance = lambda e: abs(math.log(max(error, 1e-300) / max(e, 1e-300)))
        accumulate = "fp32" if distance(error_fp32) <= distance(error_compute) else "compute"
    return AccumulationProbe(dtype, device, torch.__version__, inner_dim, accumulate, match_fp32, match_compute, error,
                             error_fp32, error_compute)
