"""Every seeded bug is caught, and by the property that names it (the checked-in report
reports/python/README.md quotes each shrunk counterexample)."""
import pytest

import nsverify
import numpy_tp
import seeded_kernel_bugs as kernel_bugs

KERNEL_BUGS = [
    # (implementation, check_kernel arguments, the property that must catch it)
    (kernel_bugs.transpose_rule_inverted, dict(kernel="gram"), "agrees_with_the_reference_within_its_own_error"),
    (kernel_bugs.gram_restart_dropped, dict(kernel="gram"), "agrees_with_the_reference_within_its_own_error"),
    (kernel_bugs.batch_shares_one_norm, dict(kernel="standard", batched=True), "batched_equals_loop_exactly"),
    (kernel_bugs.nan_silently_zeroed, dict(kernel="standard"), "non_finite_input_gives_non_finite_output"),
]

TP_BUGS = [
    (numpy_tp.norm_per_shard, dict(claim="rounding"), "tp_result_is_within_the_s5_bound_of_the_target"),
    (numpy_tp.per_shard_ns, dict(claim="exact"), "tp_result_equals_the_target_bit_for_bit"),
    (numpy_tp.autotp_muon_update, dict(claim="exact", aspect_scale=True), "tp_result_equals_the_target_bit_for_bit"),
    (numpy_tp.local_aspect_scale, dict(claim="rounding", aspect_scale=True), "tp_result_is_within_the_s5_bound_of_the_target"),
]


def assert_caught(result, prop):
    assert not result, f"the seeded bug passed:\n{result}"
    p = result[prop]
    assert p.status == "fails", f"{prop} did not catch it:\n{result}"
    assert p.counterexample and p.replay and p.message
    return p


@pytest.mark.parametrize("fn, kwargs, prop", KERNEL_BUGS, ids=[b[0].__name__ for b in KERNEL_BUGS])
def test_kernel_bug_is_caught(fn, kwargs, prop):
    assert_caught(nsverify.check_kernel(fn, **kwargs), prop)


@pytest.mark.parametrize("fn, kwargs, prop", TP_BUGS, ids=[b[0].__name__ + "-" + b[1]["claim"] for b in TP_BUGS])
def test_tp_bug_is_caught(fn, kwargs, prop):
    p = assert_caught(nsverify.check_tp(fn, kernel="standard", **kwargs), prop)
    assert "tp" in p.detail["input"]


def test_norm_per_shard_matches_no_semantics():
    assert nsverify.check_tp(numpy_tp.norm_per_shard, claim="none", kernel="standard").diagnosis is None
