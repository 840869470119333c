"""nsverify's generators as Hypothesis strategies (nsverify.hypothesis_strategies: nsverify.strategies() is the TP strategy table), for users who write their own properties.

The same distributions as the suite's RapidCheck generators (checks/generators/: shapes.hpp,
matrices.hpp, configs.hpp), drawn and shrunk by Hypothesis:

    shapes(max_dim=48)        (rows, cols): square, wide, tall, extreme aspect (short side 1..3,
                              long >= 24), 1 x n and n x 1; sides half the time a power of two or a
                              head dimension (48, 80, 96, 112, 128, 160, 192, 256), else any length
    spectra()                 {"kind", "rank", "alpha", "log10_condition", "scale_exponent"}: gaussian,
                              lowrank (rank 1..4), powerlaw (sigma_i = i^-alpha, alpha 0.2..3.0),
                              ill_conditioned (geometric, condition 1e1..1e7), integer (-8..8);
                              scales 2^0 (3 in 4) or 2^-4..2^4, exact, inside fp16's range
    matrices(shape=None, spectrum=None, dtype=np.float32)
                              a C-ordered array of that shape and spectrum, float32-representable
                              values (rounded to float32 before the power-of-two scale, as a gradient)
    batches(max_dim=16)       a 3-D batch of equally shaped matrices (K7's inputs)
    configs(...)              nsverify.NsConfig over the schema's kernels, dtypes, accumulations,
                              schedules and step counts (each list narrowable)
    layouts(max_dim=64, max_tp=8)   (rows, cols, tp, axis, nsverify.Layout): AutoTP's grain rule
                              (grain 1 or 64) and head-aligned layouts (heads, kv_heads), zero-width
                              ranks included when tp exceeds the KV groups

A matrix is built in numpy from values Hypothesis draws (a seed and the spectrum's parameters), so
it shrinks towards small, well-conditioned, gaussian cases like the suite's; the seed's numbers
are numpy's, not RapidCheck's: the same parameters give another matrix than the suite's.

    from hypothesis import given
    from nsverify import hypothesis_strategies as nst

    @given(nst.matrices())
    def test_my_ns_is_orthogonal_enough(G):
        ...
"""

import numpy as np
from hypothesis import strategies as st

from . import _reference

HEAD_DIMS = (48, 80, 96, 112, 128, 160, 192, 256)
SPECTRUM_KINDS = ("gaussian", "lowrank", "powerlaw", "ill_conditioned", "integer")


def _check_max(name, value, low, high):
    if not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name}: must be an integer between {low} and {high}, got {value!r}")


def dimensions(max_dim=48):
    """A side in [1, max_dim]: half the time a power of two or a head dimension, else any length."""
    _check_max("max_dim", max_dim, 1, 4096)
    special = [1 << k for k in range(13) if 1 << k <= max_dim] + [h for h in HEAD_DIMS if h <= max_dim]
    return st.one_of(st.sampled_from(sorted(set(special))), st.integers(1, max_dim))


def _distinct_sorted(max_dim):
    def order(p):
        a, b = sorted(p)
        if a == b:
            b, a = (b + 1, a) if b < max_dim else (b, a - 1)
        return a, b
    return st.tuples(dimensions(max_dim), dimensions(max_dim)).map(order)


def shapes(max_dim=48, kinds=None):
    """(rows, cols) of the suite's shape kinds (weights 3:4:4:1:1:1:1 as shapes.hpp), max_dim >= 2.

    kinds: a subset of ("square", "wide", "tall", "extreme_wide", "extreme_tall", "row_vector",
    "column_vector")."""
    _check_max("max_dim", max_dim, 2, 4096)
    d = dimensions(max_dim)
    extreme = st.tuples(st.integers(1, 3), st.integers(min(24, max_dim), max_dim))
    by_kind = {
        "square": (3, d.map(lambda n: (n, n))),
        "wide": (4, _distinct_sorted(max_dim)),
        "tall": (4, _distinct_sorted(max_dim).map(lambda p: (p[1], p[0]))),
        "extreme_wide": (1, extreme),
        "extreme_tall": (1, extreme.map(lambda p: (p[1], p[0]))),
        "row_vector": (1, d.map(lambda n: (1, n))),
        "column_vector": (1, d.map(lambda n: (n, 1))),
    }
    chosen = list(by_kind) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in by_kind]
    if unknown or not chosen:
        raise ValueError(f"kinds: each must be one of {', '.join(by_kind)}, got {unknown or chosen!r}")
    # weights as repetitions (one_of draws uniformly among its branches)
    return st.one_of(*[s for k in chosen for s in [by_kind[k][1]] * by_kind[k][0]])


def spectra(kinds=SPECTRUM_KINDS):
    """The spectrum of a generated matrix (weights 4:2:2:2:1 as matrices.hpp)."""
    weights = {"gaussian": 4, "lowrank": 2, "powerlaw": 2, "ill_conditioned": 2, "integer": 1}
    kinds = list(kinds)
    unknown = [k for k in kinds if k not in weights]
    if unknown or not kinds:
        raise ValueError(f"kinds: each must be one of {', '.join(SPECTRUM_KINDS)}, got {unknown or kinds!r}")
    kind = st.one_of(*[st.just(k) for k in kinds for _ in range(weights[k])])
    scale = st.one_of(st.just(0), st.just(0), st.just(0), st.integers(-4, 4))
    return st.builds(lambda k, r, a, c, s: {"kind": k, "rank": r, "alpha": a / 10.0, "log10_condition": c, "scale_exponent": s},
                     kind, st.integers(1, 4), st.integers(2, 30), st.integers(1, 7), scale)


def _orthonormal_columns(z):
    q, r = np.linalg.qr(z)
    return q * np.sign(np.where(np.diag(r) == 0, 1.0, np.diag(r)))


def build(shape, spectrum, seed):
    """The matrix of this shape and spectrum from numpy's generator at `seed` (float64 holding float32 values)."""
    m, n = shape
    p = min(m, n)
    rng = np.random.default_rng(seed)
    kind = spectrum["kind"]
    if kind == "gaussian":
        g = rng.standard_normal((m, n))
    elif kind == "lowrank":
        r = min(spectrum["rank"], p)
        g = rng.standard_normal((m, r)) @ rng.standard_normal((r, n)) / np.sqrt(r)
    elif kind in ("powerlaw", "ill_conditioned"):
        i = np.arange(p, dtype=np.float64)
        sigma = ((i + 1) ** -spectrum["alpha"] if kind == "powerlaw" else
                 10.0 ** (-spectrum["log10_condition"] * (i / (p - 1) if p > 1 else 0 * i)))
        u = _orthonormal_columns(rng.standard_normal((m, p)))
        v = _orthonormal_columns(rng.standard_normal((n, p)))
        g = (u * sigma) @ v.T * np.sqrt(max(m, n))
    elif kind == "integer":
        g = rng.integers(-8, 9, size=(m, n)).astype(np.float64)
    else:
        raise ValueError(f"spectrum kind: must be one of {', '.join(SPECTRUM_KINDS)}, got {kind!r}")
    return g.astype(np.float32).astype(np.float64) * 2.0 ** spectrum["scale_exponent"]


@st.composite
def matrices(draw, shape=None, spectrum=None, dtype=np.float32, max_dim=48):
    """A C-ordered matrix: shape (rows, cols) or drawn from shapes(max_dim); spectrum a dict as spectra()
    draws (or drawn); dtype np.float32 (the checks' input) or np.float64."""
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype: must be numpy.float32 or numpy.float64, got {np.dtype(dtype)}")
    rows, cols = draw(shapes(max_dim)) if shape is None else shape
    if not (isinstance(rows, (int, np.integer)) and isinstance(cols, (int, np.integer)) and rows >= 1 and cols >= 1):
        raise ValueError(f"shape: must be two sides >= 1, got {shape!r}")
    spec = draw(spectra()) if spectrum is None else spectrum
    seed = draw(st.integers(0, 2**32 - 1))
    return np.ascontiguousarray(build((int(rows), int(cols)), spec, seed), dtype=dtype)


@st.composite
def batches(draw, max_dim=16, max_count=6, dtype=np.float32):
    """A 3-D batch (count, rows, cols) of 1..max_count matrices of one drawn shape."""
    rows, cols = draw(shapes(max(2, max_dim)))
    count = draw(st.integers(1, max_count))
    return np.stack([draw(matrices(shape=(rows, cols), dtype=dtype)) for _ in range(count)])


def configs(kernels=None, dtypes=None, accumulations=None, coeffs=("keller",), steps=st.integers(0, 10)):
    """nsverify.NsConfig drawn over the schema's choices (each argument narrows one knob: a list, or None
    for every choice of the schema; steps a strategy). products is "full", as the checks' default."""
    schema = _reference.CONFIG_SCHEMA

    def choice(name, given):
        allowed = schema[name]["choices"]
        values = allowed if given is None else list(given)
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise ValueError(f"{name}: each must be one of {', '.join(allowed)}, got {bad or values!r}")
        return st.sampled_from(values)

    def make(kernel, dtype, accumulate, schedule, n):
        return _reference.config(kernel=kernel, steps=n, dtype=dtype, accumulate=accumulate, products="full",
                                 coeffs=schedule, restart_at=_reference.NS_DEFAULTS["restart_at"])
    coeff_values = list(coeffs)
    return st.builds(make, choice("kernel", kernels), choice("dtype", dtypes), choice("accumulate", accumulations),
                     st.sampled_from(coeff_values), steps)


@st.composite
def layouts(draw, max_dim=64, max_tp=8):
    """(rows, cols, tp, axis, layout): a matrix shape and AutoTP's layout of its split axis.

    Half the time the grain rule (grain 1, or 64 where the axis allows), half head-aligned: heads of
    head_dim rows, kv_heads dividing heads (GQA), tp up to max_tp (ranks past the KV groups get
    zero-width shards)."""
    _check_max("max_tp", max_tp, 1, 1024)
    _check_max("max_dim", max_dim, 2, 4096)
    tp = draw(st.integers(1, max_tp))
    if draw(st.booleans()):
        rows, cols = draw(shapes(max_dim, kinds=("square", "wide", "tall")))
        axis = draw(st.sampled_from((0, 1)))
        dim = rows if axis == 0 else cols
        grain = draw(st.sampled_from((1, 64) if dim >= 64 * tp else (1,)))
        return rows, cols, tp, axis, _reference.autotp_layout(dim, tp, axis=axis, grain=grain)
    head_dim = draw(st.sampled_from((1, 2, 4, 8)))
    kv_heads = draw(st.integers(1, 4))
    heads = kv_heads * draw(st.integers(1, 4))
    rows, cols = heads * head_dim, draw(dimensions(max_dim))
    return rows, cols, tp, 0, _reference.autotp_layout(rows, tp, axis=0, heads=heads, kv_heads=kv_heads)
