"""How the checks call a user's kernel: one adapter per framework.

The C++ checks hand an adapter float32 numpy arrays (float64 for an fp64 check) and read back what
it returns as numpy arrays. The adapter owns everything framework-specific: numpy's here; torch's
(dtype, device, storage) in nsverify.torch. Its three calls:
    call(x)                  fn's result for x (2-D, or 3-D for a batch)
    call_at_offset(x, k)     fn's result for x stored k elements into a larger buffer
    call_observed(x)         (result, the input as fn left it, whether the result shares the input's memory)
"""

import numpy as np


class NumpyKernel:
    """fn(G: np.ndarray, steps) -> array-like, called on the caller's own numpy buffers."""

    def __init__(self, fn, steps):
        self.fn = fn
        self.steps = steps

    def call(self, x):
        return self.fn(x, self.steps)

    def call_at_offset(self, x, offset):
        buffer = np.zeros(offset + x.size, dtype=x.dtype)
        view = buffer[offset:offset + x.size].reshape(x.shape)
        view[...] = x
        return self.fn(view, self.steps)

    def call_observed(self, x):
        out = self.fn(x, self.steps)
        aliased = isinstance(out, np.ndarray) and np.shares_memory(out, x)
        return out, x, aliased
