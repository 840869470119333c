"""nsverify.torch.check_kernel: the kernel catalogue on a PyTorch Newton-Schulz."""

import numpy as np
import torch

from .._kernel import _name, given_settings, run_kernel_check
from .._records import DEFAULTS, NS_KNOBS, settings
from .._reference import config as _config
from .._results import CheckResult
from ._probe import probe_accumulation, support
from ._tensors import Observed, numpy_dtype, shares_storage, tidy, to_numpy, to_tensor, torch_dtype


class TorchKernel:
    """The adapter of nsverify/_adapters.py for fn(G: torch.Tensor, steps) -> torch.Tensor: the C++ checks'
    numpy input handed to fn as a tensor of `dtype` on `device`, fn's result read back as numpy."""

    def __init__(self, fn, steps, dtype, device, out_dtype):
        self.fn, self.steps, self.dtype, self.device, self.out_dtype = fn, steps, dtype, device, out_dtype

    def _result(self, out):
        return to_numpy(out, "the function's result", self.out_dtype)

    def call(self, x):
        return self._result(self.fn(to_tensor(x, self.dtype, self.device), self.steps))

    def call_at_offset(self, x, offset):
        """fn on a view that starts `offset` elements into a larger storage."""
        buffer = torch.zeros(offset + x.size, dtype=self.dtype, device=self.device)
        view = buffer[offset:offset + x.size].view(x.shape)
        view.copy_(torch.from_numpy(np.ascontiguousarray(x)))
        return self._result(self.fn(view, self.steps))

    def call_observed(self, x):
        """(result, the input as fn left it, whether the result shares the input's storage)."""
        t = to_tensor(x, self.dtype, self.device)
        seen = Observed(t)
        out = self.fn(t, self.steps)
        aliased = isinstance(out, torch.Tensor) and out.numel() > 0 and shares_storage(out, seen.span)
        after, _ = seen.input_after(x, self.out_dtype)
        return self._result(out), after, aliased


class TorchCheckResult(CheckResult):
    """A check of a torch implementation: the properties, and the environment they ran in (torch's version,
    the device, the dtype the function was handed, and what the accumulation probe found)."""

    def __init__(self, subject, properties, environment):
        for p in properties:
            p.message = tidy(p.message)
        super().__init__(subject, properties)
        self.environment = environment

    def __str__(self):
        env = self.environment
        return f"{super().__str__()}\nenvironment: torch {env['torch']} on {env['device']}; {env['accumulation']}"

    __repr__ = __str__

    def to_dict(self):
        return dict(super().to_dict(), environment=self.environment)


def resolve_accumulate(accumulate, dtype, device):
    """The accumulate knob: "auto" measured on the device (probe_accumulation), or as given; and the words
    that say which and why."""
    if accumulate != "auto":
        return accumulate, f"accumulate={accumulate} as claimed (not probed)"
    probe = probe_accumulation(dtype, device)
    return probe.accumulate, "accumulate=auto: " + probe.words()


def environment(dtype, device, input_dtype, words):
    return dict(torch=torch.__version__, device=str(device), dtype=dtype, input_dtype=input_dtype, accumulation=words)


_K = DEFAULTS["torch_kernel"]


def check_kernel(fn, kernel=_K["kernel"], steps=_K["steps"], dtype=_K["dtype"], accumulate=_K["accumulate"],
                 device=_K["device"], input_dtype=None, products=_K["products"], coeffs=_K["coeffs"],
                 restart_at=_K["restart_at"], batched=_K["batched"], required=None, properties=None,
                 max_success=_K["max_success"], max_size=_K["max_size"], max_dim=_K["max_dim"], shape=None, seed=None,
                 replay=None, promise=_K["promise"], counterexamples=None, shrink_seconds=_K["shrink_seconds"],
                 timeout=_K["timeout"]):
    """Run nsverify's kernel properties on ``fn(G: torch.Tensor, steps: int) -> torch.Tensor``.

    The same properties, generators, bounds, shrinking and replay as nsverify.check_kernel (see its
    help for each property and bound, and for ``promise`` and ``counterexamples``, which mean the same
    here), with fn handed torch tensors:

    dtype        the compute dtype fn claims ("fp32", "bf16", "fp16", "fp64"): fn receives G in it (or
                 in input_dtype) on `device`, and every bound is derived for it. A dtype torch cannot
                 multiply in on the device (fp16 on a CPU with torch 1.13) raises DtypeNotSupported.
    accumulate   "auto" (default): how the device's matmul accumulates in dtype is measured once per
                 process (probe_accumulation) and the bounds use what was found; "fp32" or "compute"
                 to claim it. The result's ``environment["accumulation"]`` says which, and why.
    input_dtype  the dtype G is handed in when it differs from the compute dtype (e.g. "fp32" for a
                 kernel that takes fp32 gradients and casts them itself); default: dtype.
    device       "cpu", "cuda", ...
    K11 input_is_left_untouched_and_not_aliased: G keeps its bits and its storage (an in-place
    normalization, ``G.data = ...`` or ``G.set_()`` fails it, naming the elements changed), and the
    result shares no storage with G.

    The result is truthy only if every required property holds; fn's result may be in any dtype
    (read back as float32, float64 for fp64).
    """
    s = settings("torch_kernel", **given_settings(locals(), restart_at))
    device = torch.device(s["device"])
    support(s["dtype"], str(device))
    given = s["input_dtype"] or s["dtype"]
    s["accumulate"], words = resolve_accumulate(s["accumulate"], s["dtype"], str(device))
    cfg = _config(**{k: s[k] for k in NS_KNOBS})
    adapter = TorchKernel(fn, cfg.steps, torch_dtype(given), device, numpy_dtype(s["dtype"]))
    return run_kernel_check(adapter, _name(fn), s, cfg, result_type=TorchCheckResult,
                            environment=environment(s["dtype"], device, given, words))
