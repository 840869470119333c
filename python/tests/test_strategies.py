"""nsverify.hypothesis_strategies: the suite's generators as Hypothesis strategies (issue 29, item 5)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nsverify
import numpy_ns
from nsverify import hypothesis_strategies as nst

# derandomize: the gate draws the same examples on every run, as its RapidCheck seed is fixed.
# data_too_large is a generation health check (Hypothesis gave up on oversized draws), not an
# assertion: it fired once in six runs on the seed-built matrices and says nothing of their values.
FAST = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.data_too_large])


@FAST
@given(nst.shapes(max_dim=48))
def test_shapes_lie_within_max_dim(shape):
    rows, cols = shape
    assert 1 <= rows <= 48 and 1 <= cols <= 48


@FAST
@given(nst.matrices(max_dim=32))
def test_matrices_are_float32_c_ordered_and_finite(G):
    assert G.dtype == np.float32 and G.flags.c_contiguous and G.ndim == 2 and np.isfinite(G).all()


@FAST
@given(nst.matrices(shape=(12, 20), spectrum={"kind": "ill_conditioned", "rank": 1, "alpha": 1.0, "log10_condition": 4,
                                              "scale_exponent": 0}, dtype=np.float64))
def test_an_ill_conditioned_spectrum_has_its_condition_number(G):
    s = np.linalg.svd(G, compute_uv=False)
    assert G.shape == (12, 20) and G.dtype == np.float64
    assert 0.5e4 < s[0] / s[-1] < 2e4   # 1e4 before the float32 rounding of the entries


@FAST
@given(nst.configs(dtypes=["fp32", "bf16"], steps=st.integers(1, 6)))
def test_configs_are_valid_ns_configs(cfg):
    assert isinstance(cfg, nsverify.NsConfig) and cfg.dtype in ("fp32", "bf16") and 1 <= cfg.steps <= 6


@FAST
@given(nst.layouts(max_dim=64, max_tp=8))
def test_layouts_cover_the_split_axis(case):
    rows, cols, tp, axis, layout = case
    assert layout.tp == tp and sum(layout.widths) == (rows if axis == 0 else cols)


@FAST
@given(nst.batches(max_dim=8))
def test_batches_are_3d(batch):
    assert batch.ndim == 3 and batch.dtype == np.float32


@settings(FAST, max_examples=25)
@given(nst.matrices(max_dim=24), st.integers(1, 6))
def test_a_user_property_numpy_ns_is_the_fp32_reference(G, steps):
    """A property of one's own written with them: the shipped numpy kernel against nsverify's fp32 reference."""
    ours, ref = numpy_ns.standard_ns(G, steps), nsverify.ns(G, kernel="standard", steps=steps, dtype="fp32", products="full")
    assert ours.shape == G.shape and np.isfinite(ours).all()
    assert nsverify.rel_diff(ours, ref) < 1e-3


@pytest.mark.parametrize("call, message", [
    (lambda: nst.shapes(max_dim=1), "max_dim: must be an integer between 2 and 4096, got 1"),
    (lambda: nst.shapes(kinds=["round"]), "kinds: each must be one of square, wide"),
    (lambda: nst.spectra(kinds=["white"]), "kinds: each must be one of gaussian"),
    (lambda: nst.configs(dtypes=["fp8"]), "dtype: each must be one of"),
])
def test_bad_arguments_name_the_argument_and_the_allowed_values(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@FAST
@given(nst.shapes(max_dim=2))
def test_shapes_lie_within_the_smallest_max_dim(shape):
    # max_dim 2: distinct sides are 1 and 2 and nothing else (the tie-breaking step may not leave the range)
    rows, cols = shape
    assert 1 <= rows <= 2 and 1 <= cols <= 2


SPECTRA = [{"kind": k, "rank": 3, "alpha": 1.5, "log10_condition": 4, "scale_exponent": e}
           for k, e in [("gaussian", 0), ("lowrank", -2), ("powerlaw", 3), ("ill_conditioned", 0), ("integer_valued", 1)]]


@pytest.mark.parametrize("spectrum", SPECTRA, ids=[s["kind"] for s in SPECTRA])
@pytest.mark.parametrize("shape", [(5, 7), (12, 3), (1, 9), (129, 130)])
def test_the_same_draws_give_the_suites_matrix_bit_for_bit(spectrum, shape):
    """What the strategies build (the library's make_matrix) from a draw is what the suite's RapidCheck
    generator builds from the same draw: its normals' grid points and integers, or its seed above 128 x 128."""
    core = nsverify._nsverify
    for rc_seed in range(3):
        suite = core.sample_generated_matrix(*shape, spectrum, rc_seed)
        ours = core.make_matrix(*shape, spectrum, suite.get("grid", []), suite.get("integers", []), seed=suite["seed"])
        assert ours.shape == shape and ours.tobytes() == suite["values"].tobytes()
        # negative control: another draw gives another matrix
        if suite["seed"] is not None:
            other = core.make_matrix(*shape, spectrum, seed=suite["seed"] ^ 1)
        elif suite["grid"]:
            other = core.make_matrix(*shape, spectrum, [j - 1 if j > 0 else j + 1 for j in suite["grid"]], suite["integers"])
        else:
            other = core.make_matrix(*shape, spectrum, [], [(j + 1) % 9 for j in suite["integers"]])
        assert other.tobytes() != ours.tobytes()

