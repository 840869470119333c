"""nsverify's generators as Hypothesis strategies (nsverify.hypothesis_strategies: nsverify.strategies() is the TP strategy table), for users who write their own properties.

The suite's RapidCheck generators (checks/generators/: shapes.hpp, matrices.hpp, configs.hpp) with
their rules read from the library (``rules()``: special dimensions, weights, ranges), drawn and shrunk
by Hypothesis:

    shapes(max_dim=48)        (rows, cols): square, wide, tall, extreme aspect (short side 1..3,
                              long >= 24), 1 x n and n x 1, weighted as the suite; sides half the time
                              a power of two or a head dimension, else any length
    spectra()                 {"kind", "rank", "alpha", "log10_condition", "scale_exponent"}: gaussian,
                              lowrank, powerlaw, ill_conditioned, integer_valued, with the suite's
                              weights and ranges; scales 2^0 (3 in 4) or 2^-4..2^4
    matrices(shape=None, spectrum=None, dtype=np.float32)
                              a C-ordered array of that shape and spectrum, built by the library from
                              the same draws as the suite's generator (the grid points of its normals
                              and its integers; a seed above 128 x 128 elements): the same draws give
                              the same matrix, and a shrunk draw is a smaller, zero-ward one
    batches(max_dim=16)       a 3-D batch of equally shaped matrices (K7's inputs)
    configs(...)              nsverify.NsConfig over the schema's kernels, dtypes, accumulations,
                              schedules and step counts (each list narrowable)
    layouts(max_dim=64, max_tp=8)   (rows, cols, tp, axis, nsverify.Layout): AutoTP's grain rule
                              (grain 1 or 64) and head-aligned layouts (heads, kv_heads), zero-width
                              ranks included when tp exceeds the KV groups

    from hypothesis import given
    from nsverify import hypothesis_strategies as nst

    @given(nst.matrices())
    def test_my_ns_is_orthogonal_enough(G):
        ...
"""

import numpy as np
from hypothesis import strategies as st

from . import _nsverify as _core
from . import _reference

SHAPE_KINDS = ("square", "wide", "tall", "extreme_wide", "extreme_tall", "row_vector", "column_vector")
#: The library's names of the shape kinds the strategies' kinds= take (shapes.hpp prints 1xn and nx1).
_LIBRARY_SHAPE_NAMES = dict(zip(("square", "wide", "tall", "extreme_wide", "extreme_tall", "1xn", "nx1"), SHAPE_KINDS))


def rules(max_dim=48):
    """The suite's generator rules, from the library: special_dimensions, shape_weights, spectrum_weights,
    the scale, rank, alpha, condition and integer ranges, the grid of the normals."""
    return _core.generator_rules(max_dim)


def _check_max(name, value, low, high):
    if not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name}: must be an integer between {low} and {high}, got {value!r}")


def dimensions(max_dim=48):
    """A side in [1, max_dim]: half the time a power of two or a head dimension, else any length."""
    _check_max("max_dim", max_dim, 1, 4096)
    return st.one_of(st.sampled_from(rules(max_dim)["special_dimensions"]), st.integers(1, max_dim))


def _distinct_sorted(max_dim):
    def order(p):
        a, b = sorted(p)
        if a == b:
            b, a = (b + 1, a) if b < max_dim else (b, a - 1)
        return a, b
    return st.tuples(dimensions(max_dim), dimensions(max_dim)).map(order)


def shapes(max_dim=48, kinds=None):
    """(rows, cols) of the suite's shape kinds, weighted as the suite (rules()["shape_weights"]), max_dim >= 2.

    kinds: a subset of ("square", "wide", "tall", "extreme_wide", "extreme_tall", "row_vector",
    "column_vector")."""
    _check_max("max_dim", max_dim, 2, 4096)
    r = rules(max_dim)
    d = dimensions(max_dim)
    extreme = st.tuples(st.integers(1, r["extreme_short_max"]), st.integers(min(r["extreme_long_min"], max_dim), max_dim))
    by_kind = {
        "square": d.map(lambda n: (n, n)),
        "wide": _distinct_sorted(max_dim),
        "tall": _distinct_sorted(max_dim).map(lambda p: (p[1], p[0])),
        "extreme_wide": extreme,
        "extreme_tall": extreme.map(lambda p: (p[1], p[0])),
        "row_vector": d.map(lambda n: (1, n)),
        "column_vector": d.map(lambda n: (n, 1)),
    }
    weights = {_LIBRARY_SHAPE_NAMES[name]: w for name, w in r["shape_weights"]}
    chosen = list(by_kind) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in by_kind]
    if unknown or not chosen:
        raise ValueError(f"kinds: each must be one of {', '.join(by_kind)}, got {unknown or chosen!r}")
    # weights as repetitions (one_of draws uniformly among its branches)
    return st.one_of(*[by_kind[k] for k in chosen for _ in range(weights[k])])


def spectra(kinds=None):
    """The spectrum of a generated matrix, kinds and parameters as the suite draws them (rules()); kinds
    narrows the kinds ("integer" is accepted for "integer_valued")."""
    r = rules()
    weights = dict(r["spectrum_weights"])
    kinds = list(weights) if kinds is None else ["integer_valued" if k == "integer" else k for k in kinds]
    unknown = [k for k in kinds if k not in weights]
    if unknown or not kinds:
        raise ValueError(f"kinds: each must be one of {', '.join(weights)}, got {unknown or kinds!r}")
    kind = st.one_of(*[st.just(k) for k in kinds for _ in range(weights[k])])
    e = r["max_scale_exponent"]
    scale = st.one_of(*[st.just(0)] * r["unscaled_weight"], st.integers(-e, e))
    low, high = r["alpha_tenths"]
    return st.builds(lambda k, rank, a, c, s: {"kind": k, "rank": rank, "alpha": a / 10.0, "log10_condition": c,
                                               "scale_exponent": s},
                     kind, st.integers(1, r["max_rank"]), st.integers(low, high), st.integers(1, r["max_log10_condition"]),
                     scale)


def _spectrum(spectrum):
    return dict(spectrum, kind="integer_valued") if spectrum.get("kind") == "integer" else spectrum


@st.composite
def matrices(draw, shape=None, spectrum=None, dtype=np.float32, max_dim=48):
    """A C-ordered matrix: shape (rows, cols) or drawn from shapes(max_dim); spectrum a dict as spectra()
    draws (or drawn); dtype np.float32 (the checks' input) or np.float64. Built by the library from the
    suite's draws (make_matrix): a seed above 128 x 128 elements, else the grid points of its normals
    (integers in [-2^20, 2^20], shrinking to 0) and an integer matrix's entries."""
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype: must be numpy.float32 or numpy.float64, got {np.dtype(dtype)}")
    rows, cols = draw(shapes(max_dim)) if shape is None else shape
    if not (isinstance(rows, (int, np.integer)) and isinstance(cols, (int, np.integer)) and rows >= 1 and cols >= 1):
        raise ValueError(f"shape: must be two sides >= 1, got {shape!r}")
    spec = _spectrum(draw(spectra()) if spectrum is None else spectrum)
    rows, cols = int(rows), int(cols)
    need, r = _core.draws_needed(rows, cols, spec), rules()
    if need["seeded"]:
        values = _core.make_matrix(rows, cols, spec, seed=draw(st.integers(0, (1 << 64) - 1)))
    else:
        h, k = r["gaussian_grid_half_width"], r["max_integer_entry"]
        grid = draw(st.lists(st.integers(-h, h), min_size=need["normals"], max_size=need["normals"]))
        ints = draw(st.lists(st.integers(-k, k), min_size=need["integers"], max_size=need["integers"]))
        values = _core.make_matrix(rows, cols, spec, grid, ints)
    return np.ascontiguousarray(values, dtype=dtype)


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
