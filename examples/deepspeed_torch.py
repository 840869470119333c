"""DeepSpeed's two Newton-Schulz kernels transcribed to PyTorch (SPEC 1.1, 1.2: DeepSpeed's
deepspeed/runtime/zero/muon/original_muon.py, zeropower_via_newtonschulz5 and
zeropower_via_gram_newtonschulz), with the compute dtype a parameter instead of the
accelerator's choice, so that they run on a CPU in fp32 and bf16.

Operation for operation as DeepSpeed writes them: the cast, the transpose of a tall matrix as a
view (X.mT), X / (||X||_F + 1e-7), the quintic steps, the Gram loop with its restart at step 2
and the standard loop on square matrices; the gram kernel normalizes in float32 before the cast,
as DeepSpeed's newest version does (SPEC 1.2). Needs python3-torch; the gate does not.

check_kernel adapters: ``kernels()`` gives fn(G, steps) -> np.ndarray for each kernel and dtype.
"""

import numpy as np
import torch

KELLER = (3.4445, -4.7750, 2.0315)


def zeropower_via_newtonschulz5(G, steps, compute_dtype):
    a, b, c = KELLER
    X = G.to(compute_dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if tall:
        X = X.mT
    return X


def zeropower_via_gram_newtonschulz(G, steps, compute_dtype):
    a, b, c = KELLER
    X = G.float() if G.dtype not in (torch.float32, torch.float64) else G
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # normalized before the cast (SPEC 1.2)
    X = X.to(compute_dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    n, m = X.size(-2), X.size(-1)
    if m <= n:  # square: the standard loop
        for _ in range(steps):
            A = X @ X.mT
            B = b * A + c * A @ A
            X = a * X + B @ X
        return X.mT if tall else X
    R = X @ X.mT
    Q = None
    restart_at = 2
    for i in range(steps):
        if i == restart_at and i != 0:
            X = Q @ X
            R = X @ X.mT
            Q = None
        Z = b * R + c * R @ R
        if Q is None:
            Q = Z.clone()
            Q.diagonal(dim1=-2, dim2=-1).add_(a)
        else:
            Q = a * Q + Z @ Q
        if i < steps - 1 and (i + 1) != restart_at:
            RZ = a * R + Z @ R
            R = a * RZ + Z @ RZ
    return X.mT @ Q.mT if tall else Q @ X


def adapter(kernel, compute_dtype):
    """fn(G, steps) for check_kernel: numpy in (2-D or 3-D), the kernel in torch on the CPU, float32 out."""
    def fn(G, steps):
        with torch.no_grad():
            out = kernel(torch.from_numpy(np.asarray(G)), steps, compute_dtype)
        return out.float().numpy()
    fn.__name__ = fn.__qualname__ = f"{kernel.__name__}[{str(compute_dtype).replace('torch.', '')}]"
    return fn


def kernels():
    """[(name, check_kernel knobs, fn)]: both kernels, fp32 and bf16 (PyTorch's CPU bf16 GEMM sums in bf16:
    accumulate="compute")."""
    out = []
    for name, kernel in (("standard", zeropower_via_newtonschulz5), ("gram", zeropower_via_gram_newtonschulz)):
        out.append((f"{name} fp32", dict(kernel=name, dtype="fp32"), adapter(kernel, torch.float32)))
        out.append((f"{name} bf16", dict(kernel=name, dtype="bf16", accumulate="compute"), adapter(kernel, torch.bfloat16)))
    return out
