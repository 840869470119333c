"""The inputs of one draw of nsverify.torch.check_optimizer: every parameter's initial weights and the
gradient each step hands it, drawn once by the checker for full tensors, so that the TP run, the tp = 1
reference and every hypothesis see the same bits (every difference then belongs to the optimizer).

"random" draws a spectrum per (step, parameter) as the property generators do (gaussian entries, a
power-law spectrum, a low-rank product), from a numpy Generator seeded by (seed, draw, step, the name's
CRC-32, DP rank): a parameter's inputs do not depend on which other parameters are in the run, which is
what lets replay and shrinking rerun one parameter alone. Under DP each DP rank's gradient is drawn
apart, and the gradient handed to the optimizer is their mean (what ZeRO's and FSDP's reduce-scatter
leave), computed in float64 from the float32 gradients and rounded to float32 once.
"""

import zlib

import numpy as np

SPECTRA = ("gaussian", "power_law", "low_rank")


def _rng(seed, draw, step, name, dp_rank):
    return np.random.default_rng([seed, draw, step, zlib.crc32(name.encode()), dp_rank])


def initial_weights(param, seed, draw):
    """W_0: 2-D gaussian entries of variance 1 / cols (a common init); 1-D near one (a norm's gain)."""
    rng = _rng(seed, draw, 0, param.name, 1 << 20)
    if len(param.shape) == 1:
        return (1.0 + 0.1 * rng.standard_normal(param.shape)).astype(np.float32)
    return (rng.standard_normal(param.shape) / np.sqrt(param.shape[1])).astype(np.float32)


def random_gradient(shape, rng):
    """One gradient: which spectrum is drawn too. power_law: U diag(i^-1.5) V^T (orthonormal U, V from QR of
    gaussians); low_rank: a product of gaussians of rank max(1, min(shape) // 4)."""
    if len(shape) == 1:
        return rng.standard_normal(shape)
    kind = SPECTRA[rng.integers(len(SPECTRA))]
    rows, cols = shape
    k = min(rows, cols)
    if kind == "gaussian":
        return rng.standard_normal(shape)
    if kind == "power_law":
        u = np.linalg.qr(rng.standard_normal((rows, k)))[0]
        v = np.linalg.qr(rng.standard_normal((cols, k)))[0]
        return (u * np.arange(1, k + 1) ** -1.5) @ v.T * np.sqrt(rows * cols)
    r = max(1, k // 4)
    return rng.standard_normal((rows, r)) @ rng.standard_normal((r, cols)) / np.sqrt(r)


def gradient(grads, param, seed, draw, step, dp):
    """The float32 gradient the optimizer gets at `step` (1-based): the DP mean of each DP rank's gradient."""
    ranks = dp or 1
    parts = []
    for d in range(ranks):
        if callable(grads):
            g = np.asarray(_numpy(grads(step, param.name, param.shape, d)), dtype=np.float64)
            if g.shape != param.shape:
                raise ValueError(f"grads(step={step}, name={param.name!r}, shape={param.shape}, dp_rank={d}) returned "
                                 f"shape {g.shape}: it must return the full gradient, of the parameter's shape")
        else:
            g = random_gradient(param.shape, _rng(seed, draw, step, param.name, d))
        parts.append(g.astype(np.float32).astype(np.float64))
    mean = parts[0] if ranks == 1 else sum(parts) / ranks
    if not np.all(np.isfinite(mean)):
        raise ValueError(f"the gradient of {param.name!r} at step {step} is not finite")
    return mean.astype(np.float32)


def _numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().double().numpy()
    return x
