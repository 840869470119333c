"""What the device can do in a dtype, found out by trying it rather than assumed.

support(dtype, device)       raises DtypeNotSupported when torch cannot multiply matrices in the dtype there
                             (torch 1.13 on a CPU: fp16)
probe_accumulation(...)      how the device's matmul accumulates in a narrow dtype: in fp32, rounding the
                             sum once (tensor cores, oneDNN on a CPU with AVX512-BF16), or in the dtype
                             itself (torch's native CPU kernel); measured once per process, on a small and
                             a large product (torch 1.13 on this CPU: fp32 for 64x1024 by 1024x64, not
                             for 16x16 by 16x16, so "compute")
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


#: The products probed, (m, k, n): a small one (the 2..48-sided matrices the checks draw, whose GEMMs
#: a CPU torch may run in another kernel than large ones: torch 1.13 does) and a large one.
PROBE_SHAPES = ((16, 16, 16), (64, 1024, 64))


@dataclasses.dataclass(frozen=True)
class ShapeProbe:
    """One probed product m x k by k x n: the fraction of its elements bit-identical to the fp32-
    accumulated product rounded once, and the relative Frobenius errors against the float64 product of
    torch's result and of the two emulations (fp32 accumulation; a sequential sum in the dtype, one
    order of many a kernel may use)."""
    shape: tuple
    match_fp32: float
    error: float
    error_fp32: float
    error_compute: float

    def fp32_like(self):
        """fp32 when (nearly) every element is fp32's; otherwise whichever emulation's error is nearer."""
        if self.match_fp32 >= 0.99:
            return True
        distance = lambda e: abs(math.log(max(self.error, 1e-300) / max(e, 1e-300)))
        return distance(self.error_fp32) <= distance(self.error_compute)


@dataclasses.dataclass(frozen=True)
class AccumulationProbe:
    """How torch's matmul in `dtype` on `device` accumulated on random matrices of PROBE_SHAPES.

    accumulate   what nsverify's knob should say: "fp32" (products summed in fp32, the sum rounded once to
                 the dtype) when every probed shape does so, else "compute" (summed in the dtype): the
                 wider bounds of the dtype's accumulation hold for both, the narrower ones only for fp32
    shapes       the ShapeProbe of each shape
    match_fp32   the smallest fraction over the shapes
    """
    dtype: str
    device: str
    torch_version: str
    accumulate: str
    shapes: tuple

    @property
    def match_fp32(self):
        return min((p.match_fp32 for p in self.shapes), default=1.0)

    def words(self):
        if self.dtype in ("fp32", "fp64"):
            return f"{self.dtype}: accumulates in {self.dtype} (not probed)"
        how = "fp32, rounding the sum once" if self.accumulate == "fp32" else f"{self.dtype} (compute)"
        each = "; ".join(f"{m}x{k} by {k}x{n}: {p.match_fp32:.2%} of the elements bit-identical to fp32 accumulation "
                         f"rounded once, relative error {p.error:.2e} (fp32 accumulation {p.error_fp32:.2e}, "
                         f"{self.dtype} accumulation {p.error_compute:.2e})" for p in self.shapes for m, k, n in [p.shape])
        return f"torch {self.torch_version}'s {self.dtype} matmul on {self.device} is taken to accumulate in {how}: {each}"


def _rel(a, b):
    return float((a - b).norm() / b.norm())


def _probe_shape(t, device, shape, g):
    m, k, n = shape
    a = torch.randn(m, k, generator=g).to(t)
    b = torch.randn(k, n, generator=g).to(t)
    got = (a.to(device) @ b.to(device)).cpu()
    exact = a.double() @ b.double()
    fp32 = (a.float() @ b.float()).to(t)  # each product exact in fp32, the sum in fp32, rounded once
    acc = torch.zeros(m, n)
    af, bf = a.float(), b.float()
    for i in range(k):  # the sum rounded to the dtype after every addition
        acc = (acc + af[:, i:i + 1] * bf[i:i + 1, :]).to(t).float()
    match = float((got.view(torch.int16) == fp32.view(torch.int16)).double().mean())
    return ShapeProbe(shape, match, _rel(got.double(), exact), _rel(fp32.double(), exact), _rel(acc.double(), exact))


@functools.lru_cache(maxsize=None)
def probe_accumulation(dtype="bf16", device="cpu", seed=0):
    """Measure how the matmul in dtype accumulates (see AccumulationProbe); cached per process."""
    if dtype in ("fp32", "fp64"):
        return AccumulationProbe(dtype, device, torch.__version__, "fp32", ())
    support(dtype, device)
    g = torch.Generator().manual_seed(seed)
    shapes = tuple(_probe_shape(torch_dtype(dtype), device, shape, g) for shape in PROBE_SHAPES)
    accumulate = "fp32" if all(p.fp32_like() for p in shapes) else "compute"
    return AccumulationProbe(dtype, device, torch.__version__, accumulate, shapes)
