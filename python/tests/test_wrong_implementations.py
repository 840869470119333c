"""The catalogue of wrong implementations (examples/wrong_implementations.py): each fails its check,
with the property that must catch it among the failures; each correct one passes (issue 27)."""
import warnings

import numpy as np
import pytest

import nsverify
from wrong_implementations import CORRECT_KERNELS, CORRECT_TP, WRONG_KERNELS, WRONG_TP

# The wrong outputs and K8's special inputs make numpy warn; those warnings are expected.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def failed(result):
    return {p.name for p in result.properties if p.status == "fails"}


@pytest.mark.parametrize("name, fn, kwargs, prop", WRONG_KERNELS, ids=[w[0] for w in WRONG_KERNELS])
def test_a_wrong_kernel_fails_with_the_property_that_catches_it(name, fn, kwargs, prop):
    result = nsverify.check_kernel(fn, **kwargs)
    assert result.verdict == "FAIL", str(result)
    assert prop in failed(result), str(result)


@pytest.mark.parametrize("name, fn, kwargs", CORRECT_KERNELS, ids=[c[0] for c in CORRECT_KERNELS])
def test_a_correct_kernel_passes(name, fn, kwargs):
    result = nsverify.check_kernel(fn, **kwargs)
    assert result.verdict == "PASS", str(result)


@pytest.mark.parametrize("name, fn, kwargs, prop", WRONG_TP, ids=[w[0] for w in WRONG_TP])
def test_a_wrong_tp_update_fails_with_the_property_that_catches_it(name, fn, kwargs, prop):
    result = nsverify.check_tp(fn, kernel="standard", diagnosis_cases=0, **kwargs)
    assert result.verdict == "FAIL", str(result)
    assert prop in failed(result), str(result)


@pytest.mark.parametrize("name, fn, kwargs", CORRECT_TP, ids=[c[0] for c in CORRECT_TP])
def test_a_correct_tp_update_passes(name, fn, kwargs):
    result = nsverify.check_tp(fn, kernel="standard", diagnosis_cases=0, **kwargs)
    assert result.verdict == "PASS", str(result)


@pytest.mark.parametrize("dtype, stored", [("fp64", "float64"), ("fp32", "float32")])
def test_a_failing_tp_checks_arrays_are_saved_in_its_dtype(dtype, stored, tmp_path):
    result = nsverify.check_tp(lambda shards, spec: shards, claim="exact", dtype=dtype, kernel="standard", diagnosis_cases=0,
                               max_success=5, counterexamples=tmp_path / "ce")
    saved = sorted((tmp_path / "ce").rglob("*.npy"))
    assert result.verdict == "FAIL" and saved, str(result)
    assert {str(np.load(f).dtype) for f in saved} == {stored}


def test_the_rotations_of_k3_catch_what_permutations_cannot():
    """The structured transforms' negative control: a kernel that normalizes each column on its own
    commutes with row and column permutations and sign flips (K4 holds), not with the Householder
    reflections of K3's transforms (K3 fails)."""
    from wrong_implementations import columns_normalized
    k3, k4 = "orthogonal_transformations_commute_with_ns_within_rounding", "permutations_commute_with_ns_within_rounding"
    result = nsverify.check_kernel(columns_normalized, kernel="standard", properties=[k3, k4])
    status = {p.name: p.status for p in result.properties}
    assert status[k3] == "fails" and status[k4] == "holds", str(result)


def test_above_the_element_shrinking_switch_the_checks_pass_correct_and_fail_wrong_kernels():
    """A pinned shape above 128 x 128 draws seeded matrices and takes the Gram route to the bounds'
    spectra (checks/generators/seeded_matrices.hpp, checks/spectra.hpp): a correct kernel passes there,
    a scaled one fails REF, a column-normalizing one K3, and a counterexample names its seed."""
    import numpy_ns
    from wrong_implementations import columns_normalized, scaled
    shape = (129, 136)  # 17544 elements, just above the switch (16384)
    assert nsverify.check_kernel(numpy_ns.standard_ns, kernel="standard", shape=shape, max_success=3).verdict == "PASS"
    ref, k3 = "agrees_with_the_reference_within_its_own_error", "orthogonal_transformations_commute_with_ns_within_rounding"
    wrong = nsverify.check_kernel(scaled(1.25, kernel="standard", dtype="fp32"), kernel="standard", shape=shape, max_success=3,
                                  properties=[ref], shrink_seconds=0)
    assert ref in failed(wrong), str(wrong)
    rotated = nsverify.check_kernel(columns_normalized, kernel="standard", shape=shape, max_success=3, properties=[k3],
                                    shrink_seconds=0)
    assert k3 in failed(rotated) and "seed 0x" in str(rotated[k3].counterexample), str(rotated)
