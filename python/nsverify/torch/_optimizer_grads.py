"""The inputs of one draw of nsverify.torch.check_optimizer: every parameter's initial weights and the
gradient each step hands it, drawn once by the checker for full tensors, so that the TP run, the tp = 1
reference and every hypothesis see the same bits (every difference then belongs to the optimizer).

"random" draws a spectrum per (step, parameter) with the property generators' rules (their kinds, weights and
parameters: gaussian, low rank, power law, ill-conditioned) and has the library build the matrix from a seed
(nsverify's make_matrix: the suite's seeded structure, the generator of its layer-sized matrices); the draws
come from a numpy Generator seeded by (seed, draw, step, the name's CRC-32, DP rank): a parameter's inputs do
not depend on which other parameters are in the run, which is what lets replay and shrinking rerun one
parameter alone. Under DP each DP rank's gradient is drawn apart, and the gradient handed to the optimizer
is their mean (what ZeRO's and FSDP's reduce-scatter leave), computed in float64 from the float32 gradients and rounded to float32 once.
"""

import zlib

import numpy as np

from .. import _nsverify as _core


def _rng(seed, draw, step, name, dp_rank):
    return np.random.default_rng([seed, draw, step, zlib.crc32(name.encode()), dp_rank])


def initial_weights(param, seed, draw):
    """W_0: 2-D gaussian entries of variance 1 / cols (a common init); 1-D near one (a norm's gain)."""
    rng = _rng(seed, draw, 0, param.name, 1 << 20)
    if len(param.shape) == 1:
        return (1.0 + 0.1 * rng.standard_normal(param.shape)).astype(np.float32)
    return (rng.standard_normal(param.shape) / np.sqrt(param.shape[1])).astype(np.float32)


def gradient_spectrum(rng):
    """A gradient's spectrum, drawn with the property generators' rules (checks/generators/matrices.hpp, read
    through the library): a kind by their weights (integer-valued matrices left out: no gradient is one), its
    rank, alpha and condition in their ranges, unscaled."""
    rules = _core.generator_rules(8)
    kinds = [(k, w) for k, w in rules["spectrum_weights"] if k != "integer_valued"]
    weights = np.array([w for _, w in kinds], dtype=np.float64)
    kind = kinds[rng.choice(len(kinds), p=weights / weights.sum())][0]
    low, high = rules["alpha_tenths"]
    return dict(kind=kind, rank=int(rng.integers(1, rules["max_rank"] + 1)), alpha=int(rng.integers(low, high + 1)) / 10,
                log10_condition=int(rng.integers(1, rules["max_log10_condition"] + 1)), scale_exponent=0)


def random_gradient(shape, rng):
    """One gradient: a vector of standard normals, or a matrix of a drawn spectrum built by the library from a
    drawn seed (float32 values)."""
    if len(shape) == 1:
        return rng.standard_normal(shape)
    spectrum = gradient_spectrum(rng)
    return _core.make_matrix(int(shape[0]), int(shape[1]), spectrum, seed=int(rng.integers(0, 1 << 63)))


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
