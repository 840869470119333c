"""The layouts check_tp draws include what trainings run: even layouts (every TP shard, and on a TP x DP mesh
every piece, of one shape) are a large share of the cases, so that a function wrong only when all pieces
look alike is caught within a few cases."""

import numpy as np
import pytest

import nsverify
import numpy_ns as ref
import numpy_tp


def _gather(parts, spec):
    """Exact: the whole matrix's NS, each rank's part of it kept."""
    if spec.dp:
        return numpy_tp.mesh_gather_ns(parts, spec)
    return numpy_tp._tp_split(ref.standard_ns(numpy_tp._whole(parts, spec), spec.steps), spec)


def _even(parts):
    return len(parts) >= 2 and all(np.shape(p) == np.shape(parts[0]) for p in parts)


def _misordered_when_even(parts, spec):
    """The gather, but with the first two results swapped whenever every piece has one shape (an index
    taken from the wrong rank, which equal shapes let through unnoticed)."""
    out = list(_gather(parts, spec))
    if spec.tp >= 2 and _even(parts):
        out[0], out[1] = out[1], out[0]
    return out


@pytest.mark.parametrize("dp", [None, 2])
def test_even_layouts_are_a_large_share_of_the_drawn_cases(dp):
    drawn = []

    def recording(parts, spec):
        drawn.append((spec.tp, _even(parts)))
        return _gather(parts, spec)
    result = nsverify.check_tp(recording, claim="exact", max_success=100, diagnosis_cases=0, dp=dp)
    assert result, str(result)
    even = [e for tp, e in drawn if tp >= 2]
    share = sum(even) / len(even)
    # The even branch is 7 of the generator's 14 weights, and P(tp >= 2) = 1 - (6/7)(1/8) under tp_degrees:
    # about half of the cases at tp >= 2 are even from that branch alone. Over >= 100 such cases the
    # binomial's standard deviation is at most 0.05, so 0.35 is three of them below the expected share.
    assert len(even) >= 100 and share >= 0.35, f"{sum(even)}/{len(even)} even ({share:.1%})"


@pytest.mark.parametrize("dp", [None, 2])
def test_a_function_wrong_only_on_even_layouts_is_caught_within_20_cases(dp):
    result = nsverify.check_tp(_misordered_when_even, claim="exact", max_success=20, diagnosis_cases=0, dp=dp,
                               shrink_seconds=0)
    assert result.verdict == "FAIL", str(result)
