"""numpy <-> torch for the checks: the tensors a user's function is handed and what it left in them.

One set of helpers for the kernel adapter (in this process) and the TP ranks (in their processes):
the input in the claimed dtype on the device, the result read back as float32 (float64 for fp64),
and the observation of the input after the call (its bits and its storage) that the properties
K11 and S-untouched judge.
"""

import re

import numpy as np
import torch

#: The compute dtypes of nsverify's configuration, as torch dtypes.
TORCH_DTYPES = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# The integer dtype of each float dtype's width: a tensor viewed as it compares bit for bit.
_BITS = {torch.float64: torch.int64, torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.float16: torch.int16}


def torch_dtype(name):
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype must be one of {', '.join(TORCH_DTYPES)}, got {name!r}") from None


def numpy_dtype(dtype_name):
    """The numpy dtype the C++ checks exchange: float64 for an fp64 check, float32 otherwise."""
    return np.float64 if dtype_name == "fp64" else np.float32


def to_tensor(array, dtype, device):
    """A tensor of its own (never the caller's numpy buffer) in `dtype` on `device`."""
    return torch.from_numpy(np.array(array, copy=True)).to(device=device, dtype=dtype)


def to_numpy(result, what, out_dtype):
    """A function's result as a numpy array of out_dtype; TypeError (a failed case) if it is not a tensor."""
    if not isinstance(result, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(result).__name__}")
    return result.detach().to(device="cpu", dtype=torch.float64 if out_dtype == np.float64 else torch.float32).numpy().copy()


def storage_span(t):
    """(first byte, end) of the memory t's storage owns; (0, 0) for an empty one."""
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    start, size = storage.data_ptr(), storage.nbytes()
    return (start, start + size) if size else (0, 0)


def shares_storage(a, b_span):
    """Whether tensor a's storage overlaps the span b_span (storage_span of another tensor)."""
    if not isinstance(a, torch.Tensor):
        return False
    lo, hi = storage_span(a)
    return hi > lo and b_span[1] > b_span[0] and lo < b_span[1] and b_span[0] < hi


class Observed:
    """The input tensor before a call, to say afterwards what the call did to it."""

    def __init__(self, t):
        self.tensor = t
        self.before = t.clone()
        self.span = storage_span(t)
        self.layout = (tuple(t.shape), t.stride(), t.storage_offset(), self.span)

    def changed(self):
        """The elements whose bits the call changed (a bool numpy array of the input's shape), or None if
        none did. ValueError (a failed case, with its words) if the call resized the input or pointed it at
        other memory (``G.data = ...``, ``G.set_(...)``): the caller's tensor is then not the one it had."""
        t = self.tensor
        if tuple(t.shape) != tuple(self.before.shape):
            raise ValueError(f"the call resized its input in place from {tuple(self.before.shape)} to {tuple(t.shape)}")
        if (t.stride(), t.storage_offset(), storage_span(t)) != self.layout[1:] or t.dtype != self.before.dtype:
            raise ValueError("the call pointed its input tensor at other memory (G.data = ... or G.set_(...)): the "
                             "caller's tensor no longer holds the caller's buffer")
        bits = _BITS[t.dtype]
        mask = (t.detach().contiguous().view(bits) != self.before.view(bits)).cpu().numpy()
        return mask if mask.any() else None

    def input_after(self, original, out_dtype):
        """The caller's input as the call left it, in the numpy of the C++ checks, and how many elements
        changed: `original` itself where no bit changed (the tensor in the claimed dtype is a rounding of
        it), the changed elements' new values where some did."""
        mask = self.changed()
        if mask is None:
            return original, 0
        after = np.array(original, dtype=out_dtype, copy=True)
        after[mask] = to_numpy(self.tensor, "the input", out_dtype)[mask]
        return after, int(mask.sum())


def tidy(text):
    """A failure's message without the Python traceback pybind11 appends to an exception's text (the
    ranks' messages already say where fn raised)."""
    return re.sub(r"\n\nAt:\n(?:\s+.*(?:\n|$))*", "", text).rstrip()
